// CHECKS: two instantiations of one function template declared indirect, each called through a host pointer
// REQUIRES: c++
// XFAIL: true -- clang-22 names an indirect entry after the source name and line (..._plus_one_l<N>): both instantiations get the same name, only one is registered, so the other host pointer is never translated
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)

#pragma omp begin declare target indirect
template <typename T> T plus_one(T x) { dev_calls++; return x + T(1); }
template int plus_one<int>(int);
template long plus_one<long>(long);
#pragma omp end declare target

int main() {
  int (*pi)(int) = plus_one<int>;
  long (*pl)(long) = plus_one<long>;
  int c = 0;
  long d = 0;
#pragma omp target map(from : c, d)
  {
    c = pi(41);
    d = pl(41L);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(c, 42);
  EXPECT_EQ(d, 42);
  EXPECT_EQ(dev_calls, 2);
  return CONF_RESULT();
}
