// A sum over a team-shared array one element of which no thread writes: on
// a GPU the element holds whatever the last block left there, so the sum is
// wrong; on the virtual GPU every block finds its team-shared memory filled
// with 0x7f bytes.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int sums[4] = {0};
#pragma omp target teams num_teams(4) thread_limit(64) map(tofrom : sums)
  {
    static int slot[64];
#pragma omp allocate(slot) allocator(omp_pteam_mem_alloc)
#pragma omp parallel num_threads(64)
    {
      int t = omp_get_thread_num();
      if (t != 17)
        slot[t] = 1;
#pragma omp barrier
      if (t == 0) {
        int s = 0;
        for (int i = 0; i < 64; ++i)
          s += slot[i];
        sums[omp_get_team_num()] = s;
      }
    }
  }
  printf("%d %d %d %d\n", sums[0], sums[1], sums[2], sums[3]);
  return 0;
}
