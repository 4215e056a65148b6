// CHECKS: pointers to non-virtual member functions (defined out of class under begin declare target indirect) captured and called on the device
// REQUIRES: c++
// EXPECT-FAIL-IF: translate=native && separate-address-space && ompsim-runtime -- a member-function pointer is a {function address, this adjustment} pair copied by value, and clang-22 emits no lookup at the call site: the host address faults; the simulated device must fault, name the function and say what translates it
// XFAIL: translate=native && gpu -- a member-function pointer is a {function address, this adjustment} pair copied by value, and clang-22 emits no lookup at the call site: the host address faults
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} called untranslated host function pointer 0x{{[0-9a-f]+}} (host symbol 'Acc::add(int)' in {{[^ ]+}}); note: 'Acc::add' is declare target indirect, but the call site did not translate the pointer: clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) or a compiler that emits one{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// XFAIL: translate=native && shared-address-space -- a member-function pointer is copied by value and clang-22 emits no lookup at the call site: the host copy runs (dev_calls stays 0)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copy runs (dev_calls stays 0)
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

struct Acc {
  int v;
  int add(int x);
  int mul(int x);
};
#pragma omp begin declare target indirect
int Acc::add(int x) { dev_calls++; return v + x; }
int Acc::mul(int x) { dev_calls++; return v * x; }
#pragma omp end declare target

int main() {
  int (Acc::*pa)(int) = &Acc::add;
  int (Acc::*pm)(int) = &Acc::mul;
  int ra = 0, rm = 0;
#pragma omp target map(from : ra, rm)
  {
    Acc a{6};
    ra = (a.*pa)(36);
    rm = (a.*pm)(7);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(ra, 42);
  EXPECT_EQ(rm, 42);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
