// CHECKS: a function pointer as a struct member, the struct mapped by value
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
#pragma omp declare target to(add1) indirect

struct op {
  int bias;
  int (*fn)(int);
};

int main(void) {
  struct op o = {5, add1};
  int r = 0;
#pragma omp target map(to : o) map(from : r)
  r = o.fn(o.bias);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 6);
  EXPECT_EQ(dev_calls, 1);
  return CONF_RESULT();
}
