// CHECKS: function pointers in nested structs (struct in struct, array of structs) mapped together
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
int mul3(int x) { dev_calls++; return x * 3; }
#pragma omp declare target to(add1, mul3) indirect

struct stage { int (*fn)(int); int repeat; };
struct pipeline { int seed; struct stage stages[2]; struct { int (*finish)(int); } tail; };

int main(void) {
  struct pipeline pl = {1, {{add1, 2}, {mul3, 1}}, {add1}};
  int r = 0;
#pragma omp target map(to : pl) map(from : r)
  {
    int v = pl.seed;
    for (int s = 0; s < 2; s++)
      for (int k = 0; k < pl.stages[s].repeat; k++)
        v = pl.stages[s].fn(v);
    r = pl.tail.finish(v);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 10);
  EXPECT_EQ(dev_calls, 4);
  return CONF_RESULT();
}
