// CHECKS: a function-pointer table kept on the device by target data and changed with target update to
// REQUIRES: c
// EXPECT-FAIL-IF: translate=native && separate-address-space && ompsim-runtime -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device; the simulated device must fault, name the function and say what translates it
// XFAIL: translate=native && gpu -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} called untranslated host function pointer 0x{{[0-9a-f]+}} (host symbol 'add1' in {{[^ ]+}}); note: 'add1' is declare target indirect, but the call site did not translate the pointer: clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) or a compiler that emits one{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// XFAIL: translate=native && shared-address-space -- clang-22 emits no lookup at the call site: the host copy runs instead of the device copy (dev_calls stays 0)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copy runs (dev_calls stays 0)
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int add1(int x) { dev_calls++; return x + 1; }
int neg(int x) { dev_calls++; return -x; }
#pragma omp declare target to(add1, neg) indirect

int main(void) {
  int (*tab[2])(int) = {add1, add1};
  int r1 = 0, r2 = 0;
#pragma omp target data map(to : tab)
  {
#pragma omp target map(from : r1)
    r1 = tab[0](1) + tab[1](1);
    tab[1] = neg;
#pragma omp target update to(tab)
#pragma omp target map(from : r2)
    r2 = tab[0](1) + tab[1](1);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r1, 4);
  EXPECT_EQ(r2, 1);
  EXPECT_EQ(dev_calls, 4);
  return CONF_RESULT();
}
