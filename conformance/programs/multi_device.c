// CHECKS: two devices: the same host pointer calls each device's own copy (each device keeps its own counter)
// REQUIRES: multi-device
// ENV: OMPSIM_NUM_DEVICES=2
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int add_dev(int x) { dev_calls++; return x + 1000; }
#pragma omp declare target to(add_dev) indirect

int main(void) {
  int n = omp_get_num_devices();
  EXPECT_TRUE(n >= 2);
  if (n < 2)
    return CONF_RESULT();
  int (*fp)(int) = add_dev;
  int r[2] = {0, 0}, counts[2] = {0, 0};
  for (int d = 0; d < 2; d++) {
    int rd = 0;
    for (int k = 0; k <= d; k++) {
#pragma omp target device(d) map(from : rd)
      rd = fp(d);
    }
    r[d] = rd;
  }
  for (int d = 0; d < 2; d++) {
#pragma omp target update from(dev_calls) device(d)
    counts[d] = dev_calls;
  }
  EXPECT_EQ(r[0], 1000);
  EXPECT_EQ(r[1], 1001);
  EXPECT_EQ(counts[0], 1);
  EXPECT_EQ(counts[1], 2);
  return CONF_RESULT();
}
