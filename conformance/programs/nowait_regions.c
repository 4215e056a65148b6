// CHECKS: `target nowait` regions (deferred target tasks with depend) calling captured host pointers, completed by taskwait
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int add1(int x) {
#pragma omp atomic
  dev_calls++;
  return x + 1;
}
int twice(int x) {
#pragma omp atomic
  dev_calls++;
  return x * 2;
}
#pragma omp declare target to(add1, twice) indirect

int main(void) {
  int (*inc)(int) = add1, (*dbl)(int) = twice;
  int v[8] = {0};
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    for (int k = 0; k < 8; k++) {
      int (*f)(int) = (k & 1) ? dbl : inc;
#pragma omp target nowait map(tofrom : v[k : 1]) depend(inout : v[k])
      v[k] = f(k + 10);
#pragma omp target nowait map(tofrom : v[k : 1]) depend(inout : v[k])
      v[k] = inc(v[k]);
    }
#pragma omp taskwait
  }
#pragma omp target update from(dev_calls)
  for (int k = 0; k < 8; k++)
    EXPECT_EQ(v[k], ((k & 1) ? (k + 10) * 2 : k + 11) + 1);
  EXPECT_EQ(dev_calls, 16);
  return CONF_RESULT();
}
