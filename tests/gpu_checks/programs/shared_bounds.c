// 128 threads write a team-shared array of 64 ints (argv[1] "over"), or
// the 64 threads it is sized for ("clean"): on a GPU the extra writes land
// in the next team-shared variable and the result is wrong, silently. It
// prints 1 for each team whose sum is right.
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  int threads = argc > 1 && !strcmp(argv[1], "over") ? 128 : 64;
  int sums[4] = {0};
#pragma omp target teams num_teams(4) thread_limit(128) map(tofrom : sums)
  {
    static int slot[64];
#pragma omp allocate(slot) allocator(omp_pteam_mem_alloc)
    static double scale;
#pragma omp allocate(scale) allocator(omp_pteam_mem_alloc)
#pragma omp parallel num_threads(threads)
    {
      // Right whatever the team's size: a host offload may give fewer threads.
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      if (t == 0)
        scale = 2.0;
      slot[t] = t;
#pragma omp barrier
      if (t == 0) {
        int s = 0;
        for (int i = 0; i < n && i < 64; ++i)
          s += slot[i];
        int m = n < 64 ? n : 64;
        sums[omp_get_team_num()] = s == m * (m - 1) / 2 && scale == 2.0;
      }
    }
  }
  printf("%d %d %d %d\n", sums[0], sums[1], sums[2], sums[3]);
  return 0;
}
