// CHECKS: 1100 indirect functions (declared with macros) called through a mapped table: every one reaches its device copy
// REQUIRES: c
// EXPECT-FAIL-IF: translate=native && separate-address-space && ompsim-runtime -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device; the simulated device must fault, name the function and say what translates it
// XFAIL: translate=native && gpu -- clang-22 emits no lookup at the call site: the host address loaded from device memory is not callable on the device
// CHECK-FAIL-STDERR: {{^}}ompsim: device 0: kernel {{[^ ]+}} called untranslated host function pointer 0x{{[0-9a-f]+}} (host symbol '[[FN:f[0-9]+]]' in {{[^ ]+}}); note: '[[FN]]' is declare target indirect, but the call site did not translate the pointer: clang-22 emits no call-site lookup; build with 'ompsim cc' (the default --translate=pass) or a compiler that emits one{{$}}
// CHECK-FAIL-STDERR-NOT: ompsim:
// XFAIL: translate=native && shared-address-space -- clang-22 emits no lookup at the call site: the host copy runs instead of the device copy (dev_calls stays 0)
// XFAIL: translate=pass && shared-address-space && !ompsim-runtime -- stock libomptarget never publishes the function-pointer table to ompsim's device runtime, so the pass's lookups miss and the host copy runs (dev_calls stays 0)
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

/* D10(p) defines f<p>0 .. f<p>9; D100 and D1000 nest it, so D1000(1) is f1000 .. f1999. */
#define DEF(n) int f##n(int x) { dev_calls++; return x + n; }
#define D10(p) DEF(p##0) DEF(p##1) DEF(p##2) DEF(p##3) DEF(p##4) DEF(p##5) DEF(p##6) DEF(p##7) DEF(p##8) DEF(p##9)
#define D100(p) D10(p##0) D10(p##1) D10(p##2) D10(p##3) D10(p##4) D10(p##5) D10(p##6) D10(p##7) D10(p##8) D10(p##9)
#define D1000(p) D100(p##0) D100(p##1) D100(p##2) D100(p##3) D100(p##4) D100(p##5) D100(p##6) D100(p##7) D100(p##8) D100(p##9)

#pragma omp begin declare target indirect
D1000(1)
D100(20)
#pragma omp end declare target

#undef DEF
#define DEF(n) f##n,
int (*table[])(int) = {D1000(1) D100(20)};
enum { NFUN = sizeof table / sizeof table[0] };

int main(void) {
  long sum = 0, want = 0;
  for (int i = 0; i < NFUN; i++)
    want += 1000 + i;
  EXPECT_EQ(NFUN, 1100);
#pragma omp target map(to : table) map(tofrom : sum)
  for (int i = 0; i < NFUN; i++)
    sum += table[i](0);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(sum, want);
  EXPECT_EQ(dev_calls, NFUN);
  return CONF_RESULT();
}
