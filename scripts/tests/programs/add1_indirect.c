// An indirect function called through a host function pointer in a target
// region: prints 42 and exits 0 when the pointer reached the device translated.
#include <stdio.h>
int add1(int x) { return x + 1; }
#pragma omp declare target to(add1) indirect
int main(void) {
  int (*fp)(int) = add1;
  int r = 0;
#pragma omp target map(tofrom: r)
  r = fp(41);
  printf("%d\n", r);
  return r == 42 ? 0 : 1;
}
