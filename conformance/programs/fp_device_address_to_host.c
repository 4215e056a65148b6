// CHECKS: a function address taken on the device, returned to the host and sent back, still calls the device function
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int add5(int x) { dev_calls++; return x + 5; }
#pragma omp declare target to(add5) indirect

typedef int (*op_t)(int);

int main(void) {
  op_t from_device = 0;
  int r = 0;
#pragma omp target map(from : from_device)
  from_device = add5;
  EXPECT_TRUE(from_device != 0);
  /* from_device holds a device address: never call it on the host. */
#pragma omp target map(from : r)
  r = from_device(37);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 42);
  EXPECT_EQ(dev_calls, 1);
  return CONF_RESULT();
}
