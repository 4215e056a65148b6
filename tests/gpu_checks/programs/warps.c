// Warp collectives of an ompx_bare kernel, one kernel a mode (argv[1]):
// shuffles that read lanes which do not take part, masks that break CUDA's
// rules, and a clean warp sum.
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
#include <string.h>

// Lanes 16-31 of each warp finish; lanes 0-15 shuffle over the whole warp.
static int finished(void) {
  int out[64] = {0};
#pragma omp target teams ompx_bare num_teams(1) thread_limit(64) map(tofrom : out)
  {
    int t = ompx_thread_id_x();
    if (t % 32 < 16)
      out[t] = ompx_shfl_down_sync_i(0xffffffffu, t, 1, 32);
  }
  return out[0];
}

// A block of 48 threads: its second warp has 16 lanes, whose last reads the
// 17th.
static int past(void) {
  int out[48] = {0};
#pragma omp target teams ompx_bare num_teams(1) thread_limit(48) map(tofrom : out)
  {
    int t = ompx_thread_id_x();
    out[t] = ompx_shfl_down_sync_i(0xffffffffu, t, 1, 32);
  }
  return out[0];
}

// Lanes 16-31 call a ballot whose mask names lanes 0-15 only.
static int unnamed(void) {
  int out[32] = {0};
#pragma omp target teams ompx_bare num_teams(1) thread_limit(32) map(tofrom : out)
  {
    int t = ompx_thread_id_x();
    out[t] = (int)ompx_ballot_sync(0xffffu, t % 2);
  }
  return out[0];
}

// Lanes 0-15 shuffle over the whole warp while lanes 16-31 wait at the
// block's barrier.
static int barrier(void) {
  int out[32] = {0};
#pragma omp target teams ompx_bare num_teams(1) thread_limit(32) map(tofrom : out)
  {
    int t = ompx_thread_id_x();
    if (t < 16)
      out[t] = ompx_shfl_down_sync_i(0xffffffffu, t, 1, 32);
    else
      ompx_sync_block(0);
  }
  return out[0];
}

// Each 32 lanes' sum by shuffles, each team's by a barrier (the mask names
// every lane of the warp, 32 or 64).
static int clean(void) {
  int sums[4] = {0};
#pragma omp target teams ompx_bare num_teams(4) thread_limit(64) map(tofrom : sums)
  {
    static int partial[2];
#pragma omp allocate(partial) allocator(omp_pteam_mem_alloc)
    int t = ompx_thread_id_x(), v = t + 1;
    for (int d = 16; d > 0; d /= 2)
      v += ompx_shfl_down_sync_i(~0ull, v, d, 32);
    if (t % 32 == 0)
      partial[t / 32] = v;
    ompx_sync_block(0);
    if (t == 0)
      sums[ompx_block_id_x()] = partial[0] + partial[1];
  }
  return sums[0] + sums[1] + sums[2] + sums[3];
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  int r = !strcmp(mode, "finished")  ? finished()
          : !strcmp(mode, "past")    ? past()
          : !strcmp(mode, "unnamed") ? unnamed()
          : !strcmp(mode, "barrier") ? barrier()
                                     : clean();
  printf("%s %d\n", mode, r);
  return 0;
}
