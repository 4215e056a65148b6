// CHECKS: a NULL function pointer reaches the device as NULL (scalar and in a mapped array) and compares equal to NULL
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int add1(int x) { dev_calls++; return x + 1; }
#pragma omp declare target to(add1) indirect

int main(void) {
  int (*fp)(int) = 0;
  int (*tab[2])(int) = {0, 0};
  int scalar_null = 0, array_null = 0, r = -1;
#pragma omp target map(to : tab) map(from : scalar_null, array_null, r)
  {
    scalar_null = fp == 0;
    array_null = tab[0] == 0 && tab[1] == 0;
    r = fp ? fp(1) : 7;
  }
#pragma omp target update from(dev_calls)
  EXPECT_TRUE(scalar_null);
  EXPECT_TRUE(array_null);
  EXPECT_EQ(r, 7);
  EXPECT_EQ(dev_calls, 0);
  return CONF_RESULT();
}
