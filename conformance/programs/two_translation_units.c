// CHECKS: indirect functions defined in a second translation unit, and one in this unit called from the other
// REQUIRES: c
// BUILD: %inputs/two_tu_helper.c
// CHECK: PASS
#include "inputs/conformance.h"

extern int dev_calls;
#pragma omp declare target to(dev_calls)
int tu2_add(int x);
int tu2_mul(int x);
int tu2_apply(int (*f)(int), int x);
#pragma omp declare target to(tu2_apply)

int tu1_neg(int x) { dev_calls++; return -x; }
#pragma omp declare target to(tu1_neg) indirect

int main(void) {
  int (*add)(int) = tu2_add, (*mul)(int) = tu2_mul, (*neg)(int) = tu1_neg;
  int a = 0, m = 0, n = 0;
#pragma omp target map(from : a, m, n)
  {
    a = add(40);
    m = mul(21);
    n = tu2_apply(neg, -41);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(a, 42);
  EXPECT_EQ(m, 42);
  EXPECT_EQ(n, 42);
  EXPECT_EQ(dev_calls, 4);
  return CONF_RESULT();
}
