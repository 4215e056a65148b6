// CHECKS: indirect functions of several signatures (double, struct return, pointer argument, eight arguments, void)
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
struct pair { long a; double b; };
double hyp2(double x, double y) { dev_calls++; return x * x + y * y; }
struct pair mkpair(long a, double b) { dev_calls++; struct pair p = {a * 2, b / 2}; return p; }
void store(int *dst, int v) { dev_calls++; *dst = v; }
long sum8(long a, long b, long c, long d, long e, long f, long g, long h) { dev_calls++; return a + b + c + d + e + f + g + h; }
#pragma omp declare target to(hyp2, mkpair, store, sum8) indirect

int main(void) {
  double (*h)(double, double) = hyp2;
  struct pair (*m)(long, double) = mkpair;
  void (*st)(int *, int) = store;
  long (*s8)(long, long, long, long, long, long, long, long) = sum8;
  double rh = 0;
  struct pair rp = {0, 0};
  int stored = 0;
  long r8 = 0;
#pragma omp target map(from : rh, rp, stored, r8)
  {
    rh = h(3.0, 4.0);
    rp = m(21, 84.0);
    st(&stored, 42);
    r8 = s8(1, 2, 3, 4, 5, 6, 7, 8);
  }
#pragma omp target update from(dev_calls)
  EXPECT_TRUE(rh == 25.0);
  EXPECT_EQ(rp.a, 42);
  EXPECT_TRUE(rp.b == 42.0);
  EXPECT_EQ(stored, 42);
  EXPECT_EQ(r8, 36);
  EXPECT_EQ(dev_calls, 4);
  return CONF_RESULT();
}
