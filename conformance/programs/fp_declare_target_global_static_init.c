// CHECKS: a declare-target global table of function pointers initialised statically holds device addresses on the device
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

#pragma omp begin declare target
int dev_calls = 0;
#pragma omp end declare target
#pragma omp begin declare target indirect
int is_even(int n);
int is_odd(int n);
#pragma omp end declare target

#pragma omp begin declare target
int (*parity[2])(int) = {is_even, is_odd};
#pragma omp end declare target

int is_even(int n) { dev_calls++; return n == 0 ? 1 : parity[1](n - 1); }
int is_odd(int n) { dev_calls++; return n == 0 ? 0 : parity[0](n - 1); }

int main(void) {
  int e = -1, o = -1;
#pragma omp target map(from : e, o)
  {
    e = parity[0](10);
    o = parity[1](7);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(e, 1);
  EXPECT_EQ(o, 1);
  EXPECT_EQ(dev_calls, 19);
  return CONF_RESULT();
}
