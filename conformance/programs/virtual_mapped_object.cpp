// CHECKS: virtual calls on objects constructed on the host and mapped to the device (host vtable pointers)
// REQUIRES: c++
// EXPECT-FAIL-IF: translate=native && separate-address-space && ompsim-runtime -- clang-22 does not translate the host vtable pointer of a mapped object: the virtual call reads a host vtable the device cannot reach; the simulated device must fault, name the class and its vtable entry and say what translates it
// XFAIL: translate=native && gpu -- clang-22 does not translate the host vtable pointer of a mapped object: the virtual call reads a host vtable the device cannot reach
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} read host data at host:0x{{[0-9a-f]+}} (host symbol 'vtable for Bird+0x{{[0-9a-f]+}}' in {{[^ ]+}}) from dev:{{[^ ]+}} (0x{{[0-9a-f]+}}); note: this is the host vtable of class 'Bird', which has an offload entry (0x20), but the call site did not translate the object's vtable pointer: clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) or a compiler that emits one{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// XFAIL: translate=native && shared-address-space -- clang-22 does not translate the host vtable pointer of a mapped object: the host vtable dispatches to the host copy (dev_calls stays 0)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copy runs (dev_calls stays 0)
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

struct Animal {
  virtual int legs();
  virtual ~Animal() = default;
};
struct Bird : Animal {
  int legs() override;
};
struct Cat : Animal {
  int legs() override;
};
#pragma omp begin declare target indirect
int Animal::legs() { dev_calls++; return 0; }
int Bird::legs() { dev_calls++; return 2; }
int Cat::legs() { dev_calls++; return 4; }
#pragma omp end declare target

int main() {
  Bird b;
  Cat c;
  int r = 0;
#pragma omp target map(to : b, c) map(from : r)
  {
    Animal *volatile x = &b, *volatile y = &c;
    r = x->legs() * 10 + y->legs();
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 24);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
