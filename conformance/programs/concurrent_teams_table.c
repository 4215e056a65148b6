// CHECKS: concurrent indirect calls through a mapped table of host pointers from every thread of `teams distribute parallel for`
// REQUIRES: c
// EXPECT-FAIL-IF: translate=native && separate-address-space && ompsim-runtime -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device; the simulated device must fault, name the function and say what translates it
// XFAIL: translate=native && gpu -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} called untranslated host function pointer 0x{{[0-9a-f]+}} (host symbol '[[FN:g[0-2]]]' in {{[^ ]+}}); note: '[[FN]]' is declare target indirect, but the call site did not translate the pointer: clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) or a compiler that emits one{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// XFAIL: translate=native && shared-address-space -- clang-22 emits no lookup at the call site: the host copy runs instead of the device copy (dev_calls stays 0)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copy runs (dev_calls stays 0)
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
#pragma omp begin declare target indirect
int g0(int x) {
#pragma omp atomic
  dev_calls++;
  return x * 1;
}
int g1(int x) {
#pragma omp atomic
  dev_calls++;
  return x * 2;
}
int g2(int x) {
#pragma omp atomic
  dev_calls++;
  return x * 3;
}
#pragma omp end declare target

enum { N = 30000 };
long out[N];

int main(void) {
  int (*tab[3])(int) = {g0, g1, g2};
#pragma omp target teams distribute parallel for num_teams(8) thread_limit(4) map(to : tab) map(from : out)
  for (int i = 0; i < N; i++)
    out[i] = tab[i % 3](i);
#pragma omp target update from(dev_calls)
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += out[i] != (long)i * (i % 3 + 1);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(dev_calls, N);
  return CONF_RESULT();
}
