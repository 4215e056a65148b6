/* A plain program (OpenMP validation-suite style): exit 0 is a pass. */
#include <stdio.h>

int inc(int x) { return x + 1; }
#pragma omp declare target to(inc) indirect

int main(void) {
  int (*fp)(int) = inc;
  int r = 0;
#pragma omp target map(from : r)
  r = fp(1);
  if (r != 2) {
    printf("FAIL: r = %d\n", r);
    return 1;
  }
  return 0;
}
