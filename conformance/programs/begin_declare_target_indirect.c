// CHECKS: `begin declare target indirect` ... `end declare target`: every function in the block is callable through host pointers
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

#pragma omp begin declare target
int dev_calls = 0;
#pragma omp end declare target

#pragma omp begin declare target indirect
int square(int x) { dev_calls++; return x * x; }
int negate(int x) { dev_calls++; return -x; }
#pragma omp end declare target

int main(void) {
  int (*sq)(int) = square, (*ng)(int) = negate;
  int a = 0, b = 0;
#pragma omp target map(from : a, b)
  {
    a = sq(7);
    b = ng(a);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(a, 49);
  EXPECT_EQ(b, -49);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
