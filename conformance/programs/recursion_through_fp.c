// CHECKS: recursion through function pointers: an indirect function calls itself through the pointer it was given
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
typedef long (*rec_t)(int n, void *self);
long tri(int n, void *self) {
  dev_calls++;
  return n == 0 ? 0 : n + ((rec_t)self)(n - 1, self);
}
#pragma omp declare target to(tri) indirect

int main(void) {
  rec_t fp = tri;
  long r = 0;
#pragma omp target map(from : r)
  r = fp(100, (void *)fp);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(r, 5050);
  EXPECT_EQ(dev_calls, 101);
  return CONF_RESULT();
}
