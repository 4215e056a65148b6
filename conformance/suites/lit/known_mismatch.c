// Its CHECK line cannot match; the suite's ompsim-expectations.txt marks it XFAIL.
// RUN: %libomptarget-compile-run-and-check-generic
#include <stdio.h>
int main(void) {
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
  // CHECK: x is 3
  printf("x is %d\n", x);
  return 0;
}
