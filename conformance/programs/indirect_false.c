// CHECKS: `indirect(false)` keeps a plain declare-target function: direct calls and pointers taken on the device work
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"
#include <stdbool.h>

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

int plain(int x) { dev_calls++; return x - 1; }
#pragma omp declare target to(plain) indirect(false)

int main(void) {
  int direct = 0, via_device_ptr = 0;
#pragma omp target map(from : direct, via_device_ptr)
  {
    int (*volatile fp)(int) = plain; /* address taken on the device: a device address */
    direct = plain(43);
    via_device_ptr = fp(43);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(direct, 42);
  EXPECT_EQ(via_device_ptr, 42);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
