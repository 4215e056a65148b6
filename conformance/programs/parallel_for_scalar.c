// CHECKS: a captured host pointer called from every thread of `target parallel for` (reduction of the results)
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
long weight(long i) {
#pragma omp atomic
  dev_calls++;
  return i % 7;
}
#pragma omp declare target to(weight) indirect

int main(void) {
  long (*w)(long) = weight;
  long sum = 0, want = 0;
  for (long i = 0; i < 10000; i++)
    want += i % 7;
#pragma omp target parallel for reduction(+ : sum) map(tofrom : sum)
  for (long i = 0; i < 10000; i++)
    sum += w(i);
#pragma omp target update from(dev_calls)
  EXPECT_EQ(sum, want);
  EXPECT_EQ(dev_calls, 10000);
  return CONF_RESULT();
}
