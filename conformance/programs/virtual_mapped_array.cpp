// CHECKS: virtual calls on an array of host-built objects of several classes mapped as a section, called from a parallel loop
// REQUIRES: c++
// EXPECT-FAIL-IF: translate=native && separate-address-space && ompsim-runtime -- clang-22 does not translate the host vtable pointer of a mapped object: the virtual call reads a host vtable the device cannot reach; the simulated device must fault, name the class and its vtable entry and say what translates it
// XFAIL: translate=native && gpu -- clang-22 does not translate the host vtable pointer of a mapped object: the virtual call reads a host vtable the device cannot reach
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} read host data at host:0x{{[0-9a-f]+}} (host symbol 'vtable for [[CLS:Op|AddOp|MulOp]]+0x{{[0-9a-f]+}}' in {{[^ ]+}}) from dev:{{[^ ]+}} (0x{{[0-9a-f]+}}); note: this is the host vtable of class '[[CLS]]', which has an offload entry (0x20), but the call site did not translate the object's vtable pointer: clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) or a compiler that emits one{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// XFAIL: translate=native && shared-address-space -- clang-22 does not translate the host vtable pointer of a mapped object: the host vtable dispatches to the host copy (dev_calls stays 0)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copy runs (dev_calls stays 0)
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

struct Op {
  int k = 1;
  virtual int apply(int x) const;
  virtual ~Op() = default;
};
struct AddOp : Op {
  int apply(int x) const override;
};
struct MulOp : AddOp {
  int apply(int x) const override;
};
#pragma omp begin declare target indirect
int Op::apply(int x) const {
#pragma omp atomic
  dev_calls++;
  return x;
}
int AddOp::apply(int x) const {
#pragma omp atomic
  dev_calls++;
  return x + k;
}
int MulOp::apply(int x) const {
#pragma omp atomic
  dev_calls++;
  return x * 2;
}
#pragma omp end declare target

int main() {
  const int n = 12;
  Op base;
  AddOp add;
  MulOp mul;
  Op *objs[3] = {&base, &add, &mul};
  Op ops[n];
  AddOp adds[n];
  MulOp muls[n];
  int out[n];
  (void)objs;
#pragma omp target teams distribute parallel for map(to : ops[0 : n], adds[0 : n], muls[0 : n]) map(from : out[0 : n])
  for (int i = 0; i < n; i++) {
    const Op *o = i % 3 == 0 ? &ops[i] : i % 3 == 1 ? static_cast<const Op *>(&adds[i]) : static_cast<const Op *>(&muls[i]);
    out[i] = o->apply(i);
  }
#pragma omp target update from(dev_calls)
  for (int i = 0; i < n; i++)
    EXPECT_EQ(out[i], i % 3 == 0 ? i : i % 3 == 1 ? i + 1 : 2 * i);
  EXPECT_EQ(dev_calls, n);
  return CONF_RESULT();
}
