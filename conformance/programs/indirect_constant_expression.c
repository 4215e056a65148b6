// CHECKS: `indirect(<constant expression>)`: a true expression makes the function indirect, a false one does not
// REQUIRES: c
// XFAIL: true -- clang-22 drops the argument of indirect(<expr>) (even `true` or `1`): no indirect offload entry (flags 0x8) is emitted, so the host pointer is never translated (separate address space: untranslated-pointer fault; shared: the host copy runs)
// CHECK: PASS
#include "inputs/conformance.h"

#define WANT_INDIRECT 1

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

int yes(int x) { dev_calls++; return x + 100; }
int no(int x) { dev_calls++; return x + 200; }
#pragma omp declare target to(yes) indirect(WANT_INDIRECT && sizeof(int) == 4)
#pragma omp declare target to(no) indirect(WANT_INDIRECT - 1)

int main(void) {
  int (*fp)(int) = yes;
  int r_yes = 0, r_no = 0;
#pragma omp target map(from : r_yes, r_no)
  {
    r_yes = fp(1);
    r_no = no(2); /* a non-indirect declare-target function is still callable directly */
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r_yes, 101);
  EXPECT_EQ(r_no, 202);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
