"""Benchmark part 10: GPU images on the simulated device (docs/gpu-images.md) against the
host-offload images of the same programs. Three figures:

* a 1 Mi-element loop (`target teams distribute parallel for`), ms per launch after a warm-up
  launch: sim-nvptx and sim-amdgcn against sim's x86 ELF image and stock's host plugin
  (host-upstream) running it, and sim-nvptx with its blocks' threads as fibers
  (OMPSIM_GPU_BLOCK_LOOPS=0) against it as loops; the same for a generic-mode kernel (256 teams
  whose main threads each hand a parallel loop of 4096 iterations to workers), for the loop
  as a sum (`reduction(+ : s)`, whose regions' threads run in rounds), and for a stencil of
  HeCBench's form (a team-local tile and barriers; the GPU images' result is the reference,
  which the x86 image on libomp's teams does not meet);
* the first kernel of a process whose JIT cache is warm (the second run of the binary): the
  GPU image against the x86 bitcode image (sim-ir), which takes the same JIT path;
* 1000 barriers of one team of 1024 threads: sim-nvptx against sim's x86 image; an OpenMP
  barrier in a parallel region (a GPU image's team is a block of fibers, the x86 image's
  libomp's OS threads), and a block barrier (`ompx_sync_block`) of an `ompx_bare` kernel.
"""

import tempfile

from .common import TIMING_C, Unavailable, backend_env, compile_program, parse_kv, ratio, run_program, say

def timed_launches(sizes, kernel, includes=""):
    """A program that launches `kernel` (a target construct over `a`, N doubles mapped before)
    once to warm up and then REPEAT times, and prints the median launch's ns and a[N - 1].
    `sizes`: the constants of its enum, N and REPEAT among them."""
    return TIMING_C + includes + r"""int main(void) {
  enum { @SIZES@ };
  double *a = malloc(sizeof(double) * N);
  for (int i = 0; i < N; ++i) a[i] = i;
#pragma omp target enter data map(to : a[:N])
  double t[REPEAT];
  for (int r = -1; r < REPEAT; ++r) { /* r == -1: the warm-up launch */
    double t0 = now_ns();
@KERNEL@
    if (r >= 0) t[r] = now_ns() - t0;
  }
#pragma omp target exit data map(from : a[:N])
  qsort(t, REPEAT, sizeof(double), by_value);
  printf("median_ns=%.0f check=%.6f done=1\n", t[REPEAT / 2], a[N - 1]);
  fflush(stdout);
  free(a);
  return 0;
}
""".replace("@SIZES@", sizes).replace("@KERNEL@", kernel)


LOOP_SOURCE = timed_launches("N = 1 << 20, REPEAT = 10", """\
#pragma omp target teams distribute parallel for
    for (int i = 0; i < N; ++i) a[i] = a[i] * 0.5 + 1.0;""")

GENERIC_SOURCE = timed_launches("TEAMS = 256, PER = 4096, N = TEAMS * PER, REPEAT = 10", """\
    /* Generic mode: each team's main thread hands a parallel loop to its workers. */
#pragma omp target teams num_teams(TEAMS) thread_limit(128)
    {
      int base = omp_get_team_num() * PER;
#pragma omp parallel for
      for (int i = 0; i < PER; ++i) a[base + i] = a[base + i] * 0.5 + 1.0;
    }""", includes="#include <omp.h>\n")

REDUCTION_SOURCE = timed_launches("N = 1 << 20, REPEAT = 10", """\
    double s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
    for (int i = 0; i < N; ++i) s += a[i];
    if (s != (double)N * (N - 1) / 2) return 1; /* a wrong sum is no figure */""")

TILE_SOURCE = timed_launches("B = 256, N = 1 << 20, REPEAT = 10", """\
    /* HeCBench's form: a team-local tile, filled by the team's threads, a barrier, each thread
       reading its neighbours, a barrier, and each writing its element back. */
#pragma omp target teams num_teams(N / B) thread_limit(B)
    {
      double tile[B];
#pragma omp parallel num_threads(B)
      {
        int lid = omp_get_thread_num(), gid = omp_get_team_num() * B + lid;
        tile[lid] = a[gid];
#pragma omp barrier
        double s = tile[lid] + (lid > 0 ? tile[lid - 1] : 0) + (lid < B - 1 ? tile[lid + 1] : 0);
#pragma omp barrier
        a[gid] = s / 3.0;
      }
    }""", includes="#include <omp.h>\n")

FIRST_KERNEL_SOURCE = TIMING_C + r"""int main(void) {
  double t0 = now_ns();
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 41;
  printf("first_ns=%.0f x=%d done=1\n", now_ns() - t0, x);
  fflush(stdout);
  return 0;
}
"""

BARRIER_SOURCE = TIMING_C + r"""#include <omp.h>
int main(void) {
  enum { BARRIERS = 1000 };
  int threads = 0;
  /* The warm-up launch: the image's load and its JIT compile are not the barriers' time. */
#pragma omp target teams num_teams(1) thread_limit(1024) map(tofrom : threads)
#pragma omp parallel num_threads(1024)
  {
#pragma omp barrier
  }
  double t0 = now_ns();
#pragma omp target teams num_teams(1) thread_limit(1024) map(tofrom : threads)
#pragma omp parallel num_threads(1024)
  {
    for (int b = 0; b < BARRIERS; ++b) {
#pragma omp barrier
    }
    if (omp_get_thread_num() == 0)
      threads = omp_get_num_threads();
  }
  printf("barriers_ns=%.0f threads=%d done=1\n", now_ns() - t0, threads);
  fflush(stdout);
  return 0;
}
"""

BLOCK_BARRIER_SOURCE = TIMING_C + r"""#include <ompx.h>
int main(void) {
  enum { BARRIERS = 1000 };
  int threads = 0;
  /* The warm-up launch: the image's load and its JIT compile are not the barriers' time. */
#pragma omp target teams ompx_bare num_teams(1) thread_limit(1024) map(tofrom : threads)
  {
    ompx_sync_block_acq_rel();
  }
  double t0 = now_ns();
#pragma omp target teams ompx_bare num_teams(1) thread_limit(1024) map(tofrom : threads)
  {
    for (int b = 0; b < BARRIERS; ++b)
      ompx_sync_block_acq_rel();
    if (ompx_thread_id_x() == 0)
      threads = ompx_block_dim_x();
  }
  printf("barriers_ns=%.0f threads=%d done=1\n", now_ns() - t0, threads);
  fflush(stdout);
  return 0;
}
"""

#: Builds: (backend it runs on, ompsim cc flags).
LOOP_BUILDS = {"sim": ["--translate=pass"], "sim-nvptx": ["--translate=pass", "--gpu=sm_90"],
               "sim-amdgcn": ["--translate=pass", "--gpu=gfx90a"]}
#: The loop's figures: (backend, flags, environment). sim-nvptx runs the kernel's blocks as loops
#: over their threads (docs/gpu-images.md); "sim-nvptx-fibers" forces fibers, as before.
LOOP_FIGURES = {be: (be, flags, {}) for be, flags in LOOP_BUILDS.items()}
LOOP_FIGURES["sim-nvptx-fibers"] = ("sim-nvptx", LOOP_BUILDS["sim-nvptx"], {"OMPSIM_GPU_BLOCK_LOOPS": "0"})
#: Stock's host plugin runs the x86 image in the program's own process (the oracle's time).
LOOP_FIGURES["host-upstream"] = ("host-upstream", LOOP_BUILDS["sim"], {})
#: The tile's figures, the GPU images first: what a GPU computes is the reference its x86 image
#: (libomp's teams and threads, which the program's thread counts and barriers do not fit) is
#: held to.
TILE_FIGURES = {f: LOOP_FIGURES[f] for f in ("sim-nvptx", "sim-nvptx-fibers", "sim-amdgcn", "sim", "host-upstream")}
FIRST_BUILDS = {"sim-ir": ["--translate=pass", "--image=ir"], "sim-nvptx": ["--translate=pass", "--gpu=sm_90"]}
BARRIER_BUILDS = {"sim": ["--translate=pass"], "sim-nvptx": ["--translate=pass", "--gpu=sm_90"]}
#: The barriers' figures: sim-nvptx runs the region's (the kernel's) threads in rounds, each a
#: coroutine its barriers suspend (docs/gpu-images.md); "sim-nvptx-fibers" forces fibers.
BARRIER_FIGURES = {be: (be, flags, {}) for be, flags in BARRIER_BUILDS.items()}
BARRIER_FIGURES["sim-nvptx-fibers"] = ("sim-nvptx", BARRIER_BUILDS["sim-nvptx"], {"OMPSIM_GPU_BLOCK_LOOPS": "0"})

#: Goals: a GPU image's loop at most 3x the x86 image's, its first kernel (warm JIT cache) at
#: most 2x the x86 bitcode image's, and 1000 barriers of a 1024-thread team (or block) at most
#: 0.01 s a launch (issue 45).
LOOP_GOAL = 3.0
FIRST_KERNEL_GOAL = 2.0
BARRIER_GOAL_S = 0.01


def run_built(name, source, flags, backend, key, env_extra=None, runs=1, check=None):
    """Builds `source` with `ompsim cc <flags>` (cached), runs it on `backend` `runs` times with
    `env_extra`, and returns the `key=` value its last run printed. With `check` (a dict), the
    run's `check=` value must be check["value"] where that is set, and sets it otherwise: a run
    that computed something else gives no figure."""
    exe = compile_program(name, source, flags)
    env = backend_env(backend)
    env.update(env_extra or {})
    value = None
    for _ in range(runs):
        text, _, _ = run_program(exe, [], env)
        kv = parse_kv(text)
        if key not in kv:
            raise Unavailable("%s printed no %s: %r" % (name, key, text.strip()[:200]))
        value = kv[key]
        if check is not None:
            got = kv.get("check")
            if check.setdefault("value", got) != got:
                raise Unavailable("a wrong result: check=%s where %s printed %s" % (got, check["by"], check["value"]))
            check.setdefault("by", backend)
    return value


def bench_gpuimages(quick):
    out = {"unit": "ms", "first_kernel": {}, "barriers": {}, "block_barriers": {}}
    for key, name, source, figures in (("loop", "gpu-loop", LOOP_SOURCE, LOOP_FIGURES),
                                       ("generic", "gpu-generic", GENERIC_SOURCE, LOOP_FIGURES),
                                       ("reduction", "gpu-reduction", REDUCTION_SOURCE, LOOP_FIGURES),
                                       ("tile", "gpu-tile", TILE_SOURCE, TILE_FIGURES)):
        # Each figure's run must compute what the first figure's computes.
        out[key] = {}
        check = {}
        for figure, (be, flags, env) in figures.items():
            try:
                out[key][figure] = run_built(name, source, flags, be, "median_ns", env, check=check) / 1e6
            except Unavailable as e:
                out[key][figure] = {"unavailable": str(e)}
                say("gpuimages %s on %s: not available: %s" % (key, figure, e))
    # A JIT cache of this part's own, warmed by a first run; the second run's first kernel counts.
    with tempfile.TemporaryDirectory(prefix="ompsim-bench-jit-") as cache:
        for be, flags in FIRST_BUILDS.items():
            try:
                out["first_kernel"][be] = run_built("gpu-first", FIRST_KERNEL_SOURCE, flags, be, "first_ns",
                                               {"OMPSIM_JIT_CACHE": cache}, runs=2) / 1e6
            except Unavailable as e:
                out["first_kernel"][be] = {"unavailable": str(e)}
                say("gpuimages first kernel on %s: not available: %s" % (be, e))
    barrier_programs = (("barriers", "gpu-barriers", BARRIER_SOURCE, {"OMPSIM_DEVICE_THREADS": "1024"}),
                        ("block_barriers", "gpu-block-barriers", BLOCK_BARRIER_SOURCE, {}))
    for figure, (be, flags, env) in BARRIER_FIGURES.items():
        for key, name, source, extra in barrier_programs:
            try:
                out[key][figure] = run_built(name, source, flags, be, "barriers_ns", dict(extra, **env)) / 1e6
            except Unavailable as e:
                out[key][figure] = {"unavailable": str(e)}
                say("gpuimages %s on %s: not available: %s" % (key.replace("_", " "), figure, e))
    out["goal"] = goals(out)
    return out


def goals(out):
    """The three goals of a part's figures: ratios, and whether each is met (None: not measured)."""
    loop, first, bar = out["loop"], out["first_kernel"], out["barriers"]
    block = out.get("block_barriers", {})
    red = out.get("reduction", {})
    tile = out.get("tile", {})

    def num(v):
        return v if isinstance(v, (int, float)) else None
    g = {
        "loop_nvptx_over_x86": ratio(num(loop.get("sim-nvptx")), num(loop.get("sim"))),
        "loop_amdgcn_over_x86": ratio(num(loop.get("sim-amdgcn")), num(loop.get("sim"))),
        "loop_fibers_over_loops": ratio(num(loop.get("sim-nvptx-fibers")), num(loop.get("sim-nvptx"))),
        "loop_nvptx_over_stock": ratio(num(loop.get("sim-nvptx")), num(loop.get("host-upstream"))),
        "reduction_nvptx_over_x86": ratio(num(red.get("sim-nvptx")), num(red.get("sim"))),
        "reduction_nvptx_over_stock": ratio(num(red.get("sim-nvptx")), num(red.get("host-upstream"))),
        "reduction_fibers_over_rounds": ratio(num(red.get("sim-nvptx-fibers")), num(red.get("sim-nvptx"))),
        "tile_fibers_over_rounds": ratio(num(tile.get("sim-nvptx-fibers")), num(tile.get("sim-nvptx"))),
        "barriers_fibers_over_rounds": ratio(num(bar.get("sim-nvptx-fibers")), num(bar.get("sim-nvptx"))),
        "block_barriers_fibers_over_rounds": ratio(num(block.get("sim-nvptx-fibers")), num(block.get("sim-nvptx"))),
        "first_kernel_gpu_over_ir": ratio(num(first.get("sim-nvptx")), num(first.get("sim-ir"))),
        "barriers_nvptx_s": None if num(bar.get("sim-nvptx")) is None else bar["sim-nvptx"] / 1e3,
        "block_barriers_nvptx_s": None if num(block.get("sim-nvptx")) is None else block["sim-nvptx"] / 1e3,
    }
    g["loop_met"] = None if g["loop_nvptx_over_x86"] is None else (
        g["loop_nvptx_over_x86"] <= LOOP_GOAL and (g["loop_amdgcn_over_x86"] or 0) <= LOOP_GOAL)
    g["first_kernel_met"] = None if g["first_kernel_gpu_over_ir"] is None else (
        g["first_kernel_gpu_over_ir"] <= FIRST_KERNEL_GOAL)
    g["barriers_met"] = None if g["barriers_nvptx_s"] is None else g["barriers_nvptx_s"] < BARRIER_GOAL_S
    g["block_barriers_met"] = None if g["block_barriers_nvptx_s"] is None else (
        g["block_barriers_nvptx_s"] < BARRIER_GOAL_S)
    return g
