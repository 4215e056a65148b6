// CHECKS: an indirect function returns another function pointer (taken on the device), which the caller then invokes
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
typedef int (*op_t)(int);
int twice(int x) { dev_calls++; return 2 * x; }
int thrice(int x) { dev_calls++; return 3 * x; }
op_t choose(int k) { dev_calls++; return k ? thrice : twice; }
#pragma omp declare target to(twice, thrice, choose) indirect

int main(void) {
  op_t (*pick)(int) = choose;
  int a = 0, b = 0;
#pragma omp target map(from : a, b)
  {
    a = pick(0)(21);
    b = pick(1)(14);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(a, 42);
  EXPECT_EQ(b, 42);
  EXPECT_EQ(dev_calls, 4);
  return CONF_RESULT();
}
