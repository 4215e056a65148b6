// CHECKS: member functions defined inside the class body under `begin declare target indirect` (valid OpenMP 5.1)
// REQUIRES: c++
// XFAIL-COMPILE: true -- clang-22 rejects in-class member functions under begin declare target indirect: "Offloading entry for indirect declare target variable is incorrect: the address is invalid"
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

#pragma omp begin declare target indirect
struct Counter {
  int base;
  int next(int x) { dev_calls++; return base + x; }
};
#pragma omp end declare target

int main() {
  int (Counter::*pn)(int) = &Counter::next;
  int r = 0;
#pragma omp target map(from : r)
  {
    Counter c{40};
    r = (c.*pn)(2);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 42);
  EXPECT_EQ(dev_calls, 1);
  return CONF_RESULT();
}
