// CHECKS: `indirect(true)` behaves like a bare `indirect`
// REQUIRES: c
// XFAIL: true -- clang-22 drops the argument of indirect(<expr>) (even `true` or `1`): no indirect offload entry (flags 0x8) is emitted, so the host pointer is never translated (separate address space: untranslated-pointer fault; shared: the host copy runs)
// CHECK: PASS
#include "inputs/conformance.h"
#include <stdbool.h>

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

int triple(int x) { dev_calls++; return 3 * x; }
#pragma omp declare target to(triple) indirect(true)

int main(void) {
  int (*fp)(int) = triple;
  int r = 0;
#pragma omp target map(from : r)
  r = fp(14);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 42);
  EXPECT_EQ(dev_calls, 1);
  return CONF_RESULT();
}
