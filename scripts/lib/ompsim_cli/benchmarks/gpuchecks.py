"""Benchmark part 11: what the GPU checks cost (docs/gpu-checks.md). The same GPU image on
sim-nvptx under the checker (`OMPSIM_CHECK=1`: each access of the program's code checked, a
grid's blocks one at a time) against plain sim-nvptx; ms per launch, median of the launches after
a warm-up one (the JIT compile is not counted). Three kernels:

* the 1 Mi-element loop of part 10 (device memory only: the check between teams);
* a tile through team-shared memory, 64 teams of 256 threads, 20 rounds of a write, a barrier
  and a read of the neighbour's element (the team-shared check, with its barriers);
* a warp scan through team-shared memory, an `ompx_bare` grid of 64 blocks of 256 threads,
  5 steps each with two warp syncs (the warp rule).

Goal: at most 10x (compute-sanitizer's racecheck costs 10-100x on a GPU).
"""

from .common import TIMING_C, Unavailable, ratio, say
from .gpuimages import LOOP_SOURCE, run_built

TILE_SOURCE = TIMING_C + r"""#include <omp.h>
int main(void) {
  enum { TEAMS = 64, THREADS = 256, ROUNDS = 20, REPEAT = 5 };
  long sums[TEAMS];
  double t[REPEAT];
  for (int r = -1; r < REPEAT; ++r) {
    double t0 = now_ns();
#pragma omp target teams num_teams(TEAMS) thread_limit(THREADS) map(from : sums)
    {
      static long tile[THREADS];
#pragma omp allocate(tile) allocator(omp_pteam_mem_alloc)
#pragma omp parallel num_threads(THREADS)
      {
        int k, i = omp_get_thread_num(), n = omp_get_num_threads();
        long acc = 0;
        for (k = 0; k < ROUNDS; ++k) {
          tile[i] = i + k;
#pragma omp barrier
          acc += tile[(i + 1) % n];
#pragma omp barrier
        }
        if (i == 0)
          sums[omp_get_team_num()] = acc;
      }
    }
    if (r >= 0) t[r] = now_ns() - t0;
  }
  qsort(t, REPEAT, sizeof(double), by_value);
  printf("median_ns=%.0f sum0=%ld done=1\n", t[REPEAT / 2], sums[0]);
  fflush(stdout);
  return 0;
}
"""

SCAN_SOURCE = TIMING_C + r"""#include <omp.h>
#include <ompx.h>
#include <stdint.h>
void __kmpc_syncwarp(uint64_t mask);
int main(void) {
  enum { BLOCKS = 64, THREADS = 256, REPEAT = 5 };
  int last[BLOCKS];
  double t[REPEAT];
  for (int r = -1; r < REPEAT; ++r) {
    double t0 = now_ns();
#pragma omp target teams ompx_bare num_teams(BLOCKS) thread_limit(THREADS) map(from : last)
    {
      static int part[THREADS];
#pragma omp allocate(part) allocator(omp_pteam_mem_alloc)
      int i = ompx_thread_id_x(), lane = i % 32;
      part[i] = 1;
      for (int d = 1; d < 32; d *= 2) {
        __kmpc_syncwarp(0xffffffffu);
        int below = lane >= d ? part[i - d] : 0;
        __kmpc_syncwarp(0xffffffffu);
        part[i] += below;
      }
      if (i == THREADS - 1)
        last[ompx_block_id_x()] = part[i];
    }
    if (r >= 0) t[r] = now_ns() - t0;
  }
  qsort(t, REPEAT, sizeof(double), by_value);
  printf("median_ns=%.0f last0=%d done=1\n", t[REPEAT / 2], last[0]);
  fflush(stdout);
  return 0;
}
"""

#: The kernels: (name, source, label).
KERNELS = (("loop", LOOP_SOURCE, "1 Mi-element loop, median of 10 launches"),
           ("tile", TILE_SOURCE, "team-shared tile, 64 teams of 256 threads, 20 rounds of 2 barriers"),
           ("scan", SCAN_SOURCE, "warp scan in team-shared memory, 64 ompx_bare blocks of 256 threads"))
FLAGS = ["--translate=pass", "--gpu=sm_90"]
#: Goal: the checker at most this many times plain sim-nvptx.
CHECK_GOAL = 10.0


def bench_gpuchecks(quick):
    out = {"unit": "ms", "plain": {}, "checked": {}}
    for name, source, _ in KERNELS:
        for column, check in (("plain", "0"), ("checked", "1")):
            try:
                out[column][name] = run_built("gpu-checks-" + name, source, FLAGS, "sim-nvptx", "median_ns",
                                         {"OMPSIM_CHECK": check}) / 1e6
            except Unavailable as e:
                out[column][name] = {"unavailable": str(e)}
                say("gpuchecks %s (%s): not available: %s" % (name, column, e))
    out["goal"] = goals(out)
    return out


def goals(out):
    """Each kernel's checked/plain ratio, the worst, and whether it meets CHECK_GOAL (None: not measured)."""
    def num(v):
        return v if isinstance(v, (int, float)) else None
    ratios = {name: ratio(num(out["checked"].get(name)), num(out["plain"].get(name))) for name, _, _ in KERNELS}
    measured = [r for r in ratios.values() if r is not None]
    worst = max(measured) if measured else None
    return {"ratios": ratios, "worst": worst, "limit": CHECK_GOAL,
            "met": None if worst is None else worst <= CHECK_GOAL}
