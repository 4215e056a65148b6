// CHECKS: host threads that launch the same kernels for the first time at once (generic and SPMD, a target region each and then nowait tasks) each run it once, on the grid its clauses ask for, calling a captured host pointer
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
#pragma omp declare target to(add1) indirect

enum { THREADS = 16, KERNELS = 12, N = 64 };

/* One generic kernel of one team (a target region of its own line each): every
   thread meets at a barrier, then launches it for the first time at once (the
   plugin learns a kernel's environment, its mode and teams, at its first launch). */
#define FIRST_LAUNCH(r)                                                                   \
  do {                                                                                    \
    int k = (r);                                                                          \
    _Pragma("omp barrier")                                                                \
    _Pragma("omp target map(tofrom : seen[t][k : 1])")                                    \
    seen[t][k] = inc(seen[t][k] + k);                                                     \
  } while (0)

int main(void) {
  int (*inc)(int) = add1;
  int seen[THREADS][KERNELS] = {{0}};
  int teams[THREADS] = {0};
  int sums[THREADS] = {0};
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num();
    FIRST_LAUNCH(0);
    FIRST_LAUNCH(1);
    FIRST_LAUNCH(2);
    FIRST_LAUNCH(3);
    FIRST_LAUNCH(4);
    FIRST_LAUNCH(5);
    FIRST_LAUNCH(6);
    FIRST_LAUNCH(7);
    FIRST_LAUNCH(8);
    FIRST_LAUNCH(9);
    FIRST_LAUNCH(10);
    FIRST_LAUNCH(11);
#pragma omp barrier
    int sum = 0;
    // An SPMD kernel of 2 teams: each iteration once, on a team that knows its number.
#pragma omp target teams distribute parallel for num_teams(2) map(tofrom : sum, teams[t : 1]) reduction(+ : sum)
    for (int i = 0; i < N; i++) {
      sum += inc(i) - i;
      if (i == 0)
        teams[t] = omp_get_num_teams();
    }
    sums[t] = sum;
  }
  // The same kernels again from nowait tasks of one thread, several in flight.
  int late[THREADS] = {0};
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    for (int k = 0; k < THREADS; k++) {
#pragma omp target nowait map(tofrom : late[k : 1]) depend(inout : late[k])
      late[k] = inc(k);
    }
#pragma omp taskwait
  }
#pragma omp target update from(dev_calls)
  for (int t = 0; t < THREADS; t++) {
    for (int r = 0; r < KERNELS; r++)
      EXPECT_EQ(seen[t][r], r + 1);
    EXPECT_EQ(sums[t], N);
    EXPECT_EQ(teams[t], 2);
    EXPECT_EQ(late[t], t + 1);
  }
  EXPECT_EQ(dev_calls, THREADS * KERNELS + THREADS * N + THREADS);
  return CONF_RESULT();
}
