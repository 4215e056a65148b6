// CHECKS: C++ overloads declared indirect, picked by the pointer's type, called through host pointers
// REQUIRES: c++
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

#pragma omp begin declare target indirect
int scale(int x) { dev_calls++; return x * 2; }
double scale(double x) { dev_calls++; return x * 0.5; }
#pragma omp end declare target

int main() {
  int (*si)(int) = scale;
  double (*sd)(double) = scale;
  int a = 0;
  double b = 0;
#pragma omp target map(from : a, b)
  {
    a = si(21);
    b = sd(84.0);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(a, 42);
  EXPECT_TRUE(b == 42.0);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
