// CHECKS: function-pointer comparisons on the device: captured host pointers equal addresses taken on the device, differ from other functions, and equal each other
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int add1(int x) { return x + 1; }
int sub1(int x) { return x - 1; }
#pragma omp declare target to(add1, sub1) indirect

int main(void) {
  int (*a)(int) = add1, (*a2)(int) = add1, (*s)(int) = sub1;
  int same_fn = 0, diff_fn = 0, eq_device_taken = 0, ne_device_taken = 0;
#pragma omp target map(from : same_fn, diff_fn, eq_device_taken, ne_device_taken)
  {
    int (*volatile here)(int) = add1; /* taken on the device */
    same_fn = a == a2;
    diff_fn = a != s;
    eq_device_taken = a == here;
    ne_device_taken = s != here;
  }
  EXPECT_TRUE(same_fn);
  EXPECT_TRUE(diff_fn);
  EXPECT_TRUE(eq_device_taken);
  EXPECT_TRUE(ne_device_taken);
  return CONF_RESULT();
}
