// CHECKS: C: the OpenMP API in a target region answers as on a GPU: not the initial device, the device's number, the launch's teams, threads and thread limit
// REQUIRES: c
// XFAIL: host-upstream -- stock's host plugin does not tell the device runtime which device runs a kernel: omp_get_device_num() is -1
// XFAIL: image=ir -- a bitcode image is JIT-linked without libompsim-device-api.a: omp_get_device_num() is libomp's host answer
// ENV: OMPSIM_NUM_DEVICES=2
// ENV: KMP_TEAMS_THREAD_LIMIT=64
// ENV: OMP_NUM_THREADS=4
// CHECK: PASS
#include "inputs/conformance.h"
#include <omp.h>

int main(void) {
  int ndev = omp_get_num_devices();
  for (int dev = 0; dev < (ndev < 2 ? ndev : 2); dev++) {
    int initial = -1, devnum = -1, nteams = -1, teamnum[4] = {-1, -1, -1, -1};
    int nthreads[4] = {-1, -1, -1, -1}, threadsum[4] = {0}, limit[4] = {-1, -1, -1, -1};
#pragma omp target teams num_teams(4) thread_limit(3) device(dev)                                          \
    map(tofrom : initial, devnum, nteams, teamnum, nthreads, threadsum, limit)
    {
      int t = omp_get_team_num();
      if (t == 0) {
        initial = omp_is_initial_device();
        devnum = omp_get_device_num();
        nteams = omp_get_num_teams();
      }
      if (t < 4) {
        teamnum[t] = t;
        limit[t] = omp_get_thread_limit();
      }
#pragma omp parallel num_threads(3)
      {
        if (omp_get_thread_num() == 0 && t < 4)
          nthreads[t] = omp_get_num_threads();
#pragma omp atomic
        threadsum[t & 3] += omp_get_thread_num() + 1;
      }
    }
    EXPECT_EQ(initial, 0);
    EXPECT_EQ(devnum, dev);
    EXPECT_EQ(nteams, 4);
    for (int t = 0; t < 4; t++) {
      EXPECT_EQ(teamnum[t], t);
      EXPECT_EQ(nthreads[t], 3);
      EXPECT_EQ(threadsum[t], 6);
      EXPECT_EQ(limit[t], 3);
    }
  }
  return CONF_RESULT();
}
