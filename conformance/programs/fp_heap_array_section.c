// CHECKS: function pointers in a malloc'd array mapped through a pointer section map(to: p[0:n])
// REQUIRES: c
// EXPECT-FAIL-IF: translate=native && separate-address-space && ompsim-runtime -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device; the simulated device must fault, name the function and say what translates it
// XFAIL: translate=native && gpu -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} called untranslated host function pointer 0x{{[0-9a-f]+}} (host symbol 'sq' in {{[^ ]+}}); note: 'sq' is declare target indirect, but the call site did not translate the pointer: clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) or a compiler that emits one{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// XFAIL: translate=native && shared-address-space -- clang-22 emits no lookup at the call site: the host copy runs instead of the device copy (dev_calls stays 0)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copy runs (dev_calls stays 0)
// CHECK: PASS
#include "inputs/conformance.h"
#include <stdlib.h>

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int sq(int x) { dev_calls++; return x * x; }
int cube(int x) { dev_calls++; return x * x * x; }
#pragma omp declare target to(sq, cube) indirect

int main(void) {
  int n = 64;
  int (**p)(int) = malloc(n * sizeof *p);
  int *out = malloc(n * sizeof *out);
  for (int i = 0; i < n; i++)
    p[i] = (i & 1) ? cube : sq;
#pragma omp target map(to : p[0 : n]) map(from : out[0 : n])
  for (int i = 0; i < n; i++)
    out[i] = p[i](i);
#pragma omp target update from(dev_calls)
  for (int i = 0; i < n; i++)
    EXPECT_EQ(out[i], (i & 1) ? i * i * i : i * i);
  EXPECT_EQ(dev_calls, n);
  free(p);
  free(out);
  return CONF_RESULT();
}
