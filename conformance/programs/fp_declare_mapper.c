// CHECKS: function pointers reached through a pointer member mapped by a user-defined declare mapper
// REQUIRES: c
// XFAIL: translate=native && separate-address-space -- clang-22's mapper never copies p.ops (see translate=pass below), so the device calls a null pointer; were it copied, clang-22 emits no lookup at the call site and the host address would fault
// XFAIL: translate=native && shared-address-space -- clang-22 emits no lookup at the call site: the host copy runs instead of the device copy (dev_calls stays 0)
// XFAIL: translate=pass -- clang-22's mapper function pushes the p.ops[0:n] component with map type 0x1000000000010 (MEMBER_OF|PTR_AND_OBJ, neither TO nor FROM, even with an explicit map(to:) in the mapper; the same mapper over an int* section gets 0x1000000000013), so the device array is never copied and the device calls a null pointer (stock libomptarget 22 segfaults the same way)
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int add2(int x) { dev_calls++; return x + 2; }
int half(int x) { dev_calls++; return x / 2; }
#pragma omp declare target to(add2, half) indirect

typedef int (*op_t)(int);
struct program { int n; op_t *ops; };
#pragma omp declare mapper(struct program p) map(p, p.ops[0 : p.n])

int main(void) {
  op_t ops[3] = {add2, add2, half};
  struct program prog = {3, ops};
  int r = 0;
#pragma omp target map(to : prog) map(from : r)
  {
    int v = 6;
    for (int i = 0; i < prog.n; i++)
      v = prog.ops[i](v);
    r = v;
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 5);
  EXPECT_EQ(dev_calls, 3);
  return CONF_RESULT();
}
