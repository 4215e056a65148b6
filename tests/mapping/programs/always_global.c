// A declare-target global moves with `always` like any mapped block, both
// ways, though its reference count is infinite (stock libomptarget 22); a
// plain map of it copies nothing (it is present).
#include <stdio.h>

int g = 1;
#pragma omp declare target to(g)

int main(void) {
  int r1 = 0, r2 = 0, r3 = 0;
  g = 5;
#pragma omp target map(tofrom : g) map(from : r1)
  {
    r1 = g;
    g = 7;
  }
  int h1 = g;
#pragma omp target map(always, to : g) map(from : r2)
  {
    r2 = g;
    g = 9;
  }
  int h2 = g;
#pragma omp target map(always, tofrom : g) map(from : r3)
  {
    r3 = g;
    g = 11;
  }
  printf("r1=%d h1=%d r2=%d h2=%d r3=%d g=%d\n", r1, h1, r2, h2, r3, g);
  return r1 == 1 && h1 == 5 && r2 == 5 && h2 == 5 && r3 == 5 && g == 11 ? 0 : 1;
}
