// CHECKS: function pointers in a local array mapped whole with map(to: tab) call the device copies
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
int sub1(int x) { dev_calls++; return x - 1; }
int dbl(int x) { dev_calls++; return x * 2; }
#pragma omp declare target to(add1, sub1, dbl) indirect

int main(void) {
  int (*tab[3])(int) = {add1, sub1, dbl};
  int out[3] = {0, 0, 0};
#pragma omp target map(to : tab) map(from : out)
  for (int i = 0; i < 3; i++)
    out[i] = tab[i](10);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(out[0], 11);
  EXPECT_EQ(out[1], 9);
  EXPECT_EQ(out[2], 20);
  EXPECT_EQ(dev_calls, 3);
  return CONF_RESULT();
}
