// CHECKS: comparing function pointers loaded from a mapped table on the device (equality of equal entries, inequality of different ones, NULL)
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int add1(int x) { return x + 1; }
int sub1(int x) { return x - 1; }
#pragma omp declare target to(add1, sub1) indirect

int main(void) {
  int (*tab[4])(int) = {add1, sub1, add1, 0};
  int eq = 0, ne = 0, null_ok = 0;
#pragma omp target map(to : tab) map(from : eq, ne, null_ok)
  {
    eq = tab[0] == tab[2];
    ne = tab[0] != tab[1];
    null_ok = tab[3] == 0 && tab[0] != 0;
  }
  EXPECT_TRUE(eq);
  EXPECT_TRUE(ne);
  EXPECT_TRUE(null_ok);
  return CONF_RESULT();
}
