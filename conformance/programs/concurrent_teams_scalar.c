// CHECKS: concurrent indirect calls through captured host pointers from every thread of `teams distribute parallel for`
// REQUIRES: c
// CHECK: PASS
#include "inputs/conformance.h"

int dev_calls = 0;
#pragma omp declare target to(dev_calls)
int f0(int x) {
#pragma omp atomic
  dev_calls++;
  return x + 0;
}
int f1(int x) {
#pragma omp atomic
  dev_calls++;
  return x + 1;
}
int f2(int x) {
#pragma omp atomic
  dev_calls++;
  return x + 2;
}
int f3(int x) {
#pragma omp atomic
  dev_calls++;
  return x + 3;
}
#pragma omp declare target to(f0, f1, f2, f3) indirect

enum { N = 20000 };
int out[N];

int main(void) {
  int (*a)(int) = f0, (*b)(int) = f1, (*c)(int) = f2, (*d)(int) = f3;
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(8) map(from : out)
  for (int i = 0; i < N; i++) {
    int (*f)(int) = (i & 3) == 0 ? a : (i & 3) == 1 ? b : (i & 3) == 2 ? c : d;
    out[i] = f(i);
  }
#pragma omp target update from(dev_calls)
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += out[i] != i + (i & 3);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(dev_calls, N);
  return CONF_RESULT();
}
