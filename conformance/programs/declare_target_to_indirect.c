// CHECKS: `declare target to(f, g) indirect`: a host pointer captured as a scalar calls the device copy
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

int add1(int x) { dev_calls++; return x + 1; }
int mul2(int x) { dev_calls++; return x * 2; }
#pragma omp declare target to(add1, mul2) indirect

int main(void) {
  int (*fp)(int) = add1;
  int (*gp)(int) = mul2;
  int r1 = 0, r2 = 0, on_device = 0;
#pragma omp target map(from : r1, r2, on_device)
  {
    r1 = fp(41);
    r2 = gp(21);
    on_device = !omp_is_initial_device();
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r1, 42);
  EXPECT_EQ(r2, 42);
  EXPECT_TRUE(on_device);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
