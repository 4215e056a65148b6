// CHECKS: nesting: `begin declare target indirect` inside `begin declare target`, and `declare target to(...) indirect` inside a begin block
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

#pragma omp begin declare target
int dev_calls = 0;
int helper(int x) { return x + 1; }

#pragma omp begin declare target indirect
int inner_a(int x) { dev_calls++; return helper(x) * 10; }
#pragma omp end declare target

int inner_b(int x) { dev_calls++; return helper(x) * 100; }
#pragma omp declare target to(inner_b) indirect
#pragma omp end declare target

int main(void) {
  int (*a)(int) = inner_a, (*b)(int) = inner_b;
  int ra = 0, rb = 0;
#pragma omp target map(from : ra, rb)
  {
    ra = a(1);
    rb = b(2);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(ra, 20);
  EXPECT_EQ(rb, 300);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
