// CHECKS: a captureless lambda converted to a function pointer on the device and called there
// REQUIRES: c++
// CHECK: PASS
#include "inputs/conformance.h"

int main() {
  int r = 0;
#pragma omp target map(from : r)
  {
    int (*f)(int) = [](int x) { return x * 6; };
    int (*volatile g)(int) = f;
    r = g(7);
  }
  EXPECT_EQ(r, 42);
  return CONF_RESULT();
}
