// CHECKS: a scalar function pointer reassigned on the host between target regions calls the right device function each time
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int add1(int x) { dev_calls++; return x + 1; }
int add10(int x) { dev_calls++; return x + 10; }
int add100(int x) { dev_calls++; return x + 100; }
#pragma omp declare target to(add1, add10, add100) indirect

int main(void) {
  int (*fp)(int) = add1;
  int acc = 0;
  for (int round = 0; round < 6; round++) {
    fp = round % 3 == 0 ? add1 : round % 3 == 1 ? add10 : add100;
#pragma omp target map(tofrom : acc)
    acc = fp(acc);
  }
#pragma omp target update from(dev_calls)
  EXPECT_EQ(acc, 222);
  EXPECT_EQ(dev_calls, 6);
  return CONF_RESULT();
}
