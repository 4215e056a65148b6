// Threads of a team that share team-shared memory, one kernel a mode
// (argv[1]): reads of another thread's write with no barrier between, two
// threads' writes of one element, a warp's sum whose steps do not sync the
// warp, and a clean mode of each (barriers, atomics, warp syncs). On a GPU
// the racy ones give wrong results that nothing names.
#include <omp.h>
#include <ompx.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void __kmpc_syncwarp(uint64_t mask);

// Each thread writes its slot and, after a barrier, reads another's; the
// team counts the right ones in a team-shared count, atomically.
static int clean(void) {
  int ok[4] = {0};
#pragma omp target teams num_teams(4) thread_limit(64) map(tofrom : ok)
  {
    static int slot[64];
#pragma omp allocate(slot) allocator(omp_pteam_mem_alloc)
    static int count;
#pragma omp allocate(count) allocator(omp_pteam_mem_alloc)
#pragma omp parallel num_threads(64)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      slot[t] = t;
      if (t == 0)
        count = 0;
#pragma omp barrier
      int other = (t + 32) % n;
      int right = slot[other] == other;
#pragma omp atomic
      count += right;
#pragma omp barrier
      if (t == 0)
        ok[omp_get_team_num()] = count == n;
    }
  }
  return ok[0] + ok[1] + ok[2] + ok[3];
}

// The team adds up its thread numbers in a team-shared total, each thread
// in a critical region.
static int critical(void) {
  int ok[4] = {0};
#pragma omp target teams num_teams(4) thread_limit(64) map(tofrom : ok)
  {
    static int total;
#pragma omp allocate(total) allocator(omp_pteam_mem_alloc)
#pragma omp parallel num_threads(64)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      if (t == 0)
        total = 0;
#pragma omp barrier
#pragma omp critical
      total += t;
#pragma omp barrier
      if (t == 0)
        ok[omp_get_team_num()] = total == n * (n - 1) / 2;
    }
  }
  return ok[0] + ok[1] + ok[2] + ok[3];
}

// Thread t reads the slot thread t - distance wrote, with no barrier after
// the writes.
static int neighbour(int distance) {
  int out[64] = {0};
#pragma omp target teams num_teams(1) thread_limit(64) map(tofrom : out)
  {
    static int slot[64];
#pragma omp allocate(slot) allocator(omp_pteam_mem_alloc)
#pragma omp parallel num_threads(64)
    {
      int t = omp_get_thread_num();
      slot[t] = t;
      if (t >= distance)
        out[t] = slot[t - distance];
    }
  }
  return out[63];
}

// Two threads write each element, with no barrier between.
static int twice(void) {
  int out = 0;
#pragma omp target teams num_teams(1) thread_limit(64) map(tofrom : out)
  {
    static int slot[32];
#pragma omp allocate(slot) allocator(omp_pteam_mem_alloc)
#pragma omp parallel num_threads(64)
    {
      int t = omp_get_thread_num();
      slot[t / 2] = t;
#pragma omp barrier
      if (t == 0)
        out = slot[0];
    }
  }
  return out;
}

// A warp's sum of 1..32 through team-shared memory, in steps that each
// add a lane's element `d` lanes below; `synced`: the warp syncs between
// steps.
static int warp_sum(int synced) {
  int sum = 0;
#pragma omp target teams ompx_bare num_teams(1) thread_limit(32) map(tofrom : sum)
  {
    static int part[32];
#pragma omp allocate(part) allocator(omp_pteam_mem_alloc)
    int t = ompx_thread_id_x();
    part[t] = t + 1;
    for (int d = 1; d < 32; d *= 2) {
      if (synced)
        __kmpc_syncwarp(0xffffffffu);
      int below = t >= d ? part[t - d] : 0;
      if (synced)
        __kmpc_syncwarp(0xffffffffu);
      part[t] += below;
    }
    if (synced)
      __kmpc_syncwarp(0xffffffffu);
    if (t == 31)
      sum = part[31];
  }
  return sum;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  int r = !strcmp(mode, "lanes")         ? neighbour(1)
          : !strcmp(mode, "warps")       ? neighbour(32)
          : !strcmp(mode, "twice")       ? twice()
          : !strcmp(mode, "warp")        ? warp_sum(0)
          : !strcmp(mode, "warp-synced") ? warp_sum(1)
          : !strcmp(mode, "critical")    ? critical()
                                         : clean();
  printf("%s %d\n", mode, r);
  return 0;
}
