// A block's dynamic shared memory (ompx_dyn_cgroup_mem and
// llvm_omp_target_dynamic_shared_alloc), one kernel a mode (argv[1]): each
// thread writes its slot and, after a barrier, reads the one of the thread
// before it (clean); the same without the barrier (race); one slot no thread writes
// (unwritten); a launch asking for 60 bytes of 16 int slots (overrun); a
// thread writing far past the end (guard).
#include <omp.h>
#include <stdio.h>
#include <string.h>

#define THREADS 16

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  int m = !strcmp(mode, "race")        ? 1
          : !strcmp(mode, "unwritten") ? 2
          : !strcmp(mode, "overrun")   ? 3
          : !strcmp(mode, "guard")     ? 4
                                       : 0;
  int out[2 * THREADS] = {0};
  // Overrun: 60 bytes for 16 ints; the last slot runs 4 bytes past the end.
  int bytes = m == 3 ? 60 : THREADS * (int)sizeof(int);
#pragma omp target teams num_teams(2) thread_limit(THREADS) ompx_dyn_cgroup_mem(bytes) map(tofrom : out)
#pragma omp parallel num_threads(THREADS)
  {
    int *slot = (int *)llvm_omp_target_dynamic_shared_alloc();
    int t = omp_get_thread_num(), team = omp_get_team_num();
    if (m != 2 || t != 5)
      slot[t] = team * 100 + t;
    if (m == 4 && t == 3)
      slot[t + 32] = 1;
    if (m != 1) {
#pragma omp barrier
    }
    out[team * THREADS + t] = slot[t ? t - 1 : 0];
  }
  long sum = 0;
  for (int i = 0; i < 2 * THREADS; ++i)
    sum += out[i];
  printf("%s %ld\n", mode, sum);
  return 0;
}
