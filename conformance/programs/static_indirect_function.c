// CHECKS: an indirect function with internal linkage (static) is callable through a host pointer
// REQUIRES: c
// XFAIL-COMPILE: true -- clang-22 rejects an indirect function with internal linkage: "Offloading entry for indirect declare target variable is incorrect: the address is invalid"
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
static int hidden(int x) { dev_calls++; return x ^ 0x55; }
#pragma omp declare target to(hidden) indirect

int main(void) {
  int (*fp)(int) = hidden;
  int r = 0;
#pragma omp target map(from : r)
  r = fp(0x55 ^ 42);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 42);
  EXPECT_EQ(dev_calls, 1);
  return CONF_RESULT();
}
