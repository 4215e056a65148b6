// CHECKS: mutual recursion through a mapped table of host function pointers (even/odd)
// REQUIRES: c
// EXPECT-FAIL-IF: translate=native && separate-address-space && ompsim-runtime -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device; the simulated device must fault, name the function and say what translates it
// XFAIL: translate=native && gpu -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} called untranslated host function pointer 0x{{[0-9a-f]+}} (host symbol '[[FN:even|odd]]' in {{[^ ]+}}); note: '[[FN]]' is declare target indirect, but the call site did not translate the pointer: clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) or a compiler that emits one{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// XFAIL: translate=native && shared-address-space -- clang-22 emits no lookup at the call site: the host copy runs instead of the device copy (dev_calls stays 0)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copy runs (dev_calls stays 0)
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
struct parity;
typedef int (*par_t)(int n, const struct parity *tab);
struct parity { par_t fn[2]; };
int even(int n, const struct parity *tab) { dev_calls++; return n == 0 ? 1 : tab->fn[1](n - 1, tab); }
int odd(int n, const struct parity *tab) { dev_calls++; return n == 0 ? 0 : tab->fn[0](n - 1, tab); }
#pragma omp declare target to(even, odd) indirect

int main(void) {
  struct parity tab = {{even, odd}};
  int r = -1;
#pragma omp target map(to : tab) map(from : r)
  r = tab.fn[0](25, &tab);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 0);
  EXPECT_EQ(dev_calls, 26);
  return CONF_RESULT();
}
