"""GPU kernels whose blocks run as loops (simulator/src/gpu/BlockLoops.h): the virtual GPU runs
an SPMD kernel that meets no barrier but at its parallel regions' ends with thread 0 alone
running the code outside the regions and each region's threads one after the other, as fibers
would run them, without a fiber each. A generic kernel runs the same way, its main thread on
thread 0's stack with the main thread's ids. A kernel with a barrier, a warp collective or a spin in
a region keeps fibers, and the image trace says why. An ompx_bare kernel whose only waits are its
own block barriers runs in rounds (simulator/src/gpu/BlockRounds.h): each thread a coroutine that
the barriers suspend; so do a region's threads where its only waits are its barriers and its
parallel reductions'. Either way the program computes what it computes with
OMPSIM_GPU_BLOCK_LOOPS=0, which forces fibers, and its faults and the checker's reports are
named alike."""
import re

import pytest

pytestmark = pytest.mark.e2e

ARCHS = ["sm_90", "gfx90a"]

#: Each kernel follows a line `/* kernel NAME */`; the trace names a kernel by its line.
KERNELS = r"""
#include <omp.h>
#include <stdio.h>
int twice(int x) { return 2 * x; }
#pragma omp declare target to(twice) indirect
int main(void) {
  enum { N = 3000 };
  static int who[N], size[N], team[N], dyn[N], serial[N], fn[N], red[N];
  int seq[3] = {-1, -1, -1};
  int (*f)(int) = twice;
  int n = 10, total = 0, in_barrier = 0, generic = 0;
  /* kernel distribute */
#pragma omp target teams distribute parallel for num_teams(3) thread_limit(64) map(from : who, size, team)
  for (int i = 0; i < N; ++i) {
    who[i] = omp_get_thread_num();
    size[i] = omp_get_num_threads();
    team[i] = omp_get_team_num();
  }
  /* kernel dynamic */
#pragma omp target parallel for schedule(dynamic, 7) num_threads(40) map(from : dyn)
  for (int i = 0; i < N; ++i)
    dyn[i] = omp_get_thread_num() * 10000 + i;
  /* kernel serialized */
#pragma omp target teams distribute parallel for if(parallel : n > 100) map(from : serial)
  for (int i = 0; i < N; ++i)
    serial[i] = omp_get_num_threads();
  /* kernel indirect */
#pragma omp target teams distribute parallel for map(from : fn) map(to : f)
  for (int i = 0; i < N; ++i)
    fn[i] = f(i);
  /* kernel reduction */
#pragma omp target teams distribute parallel for reduction(+ : total) map(tofrom : total)
  for (int i = 0; i < N; ++i)
    total += i;
  /* kernel barrier */
#pragma omp target parallel num_threads(32) map(tofrom : red, in_barrier)
  {
    red[omp_get_thread_num()] = omp_get_thread_num();
#pragma omp barrier
    if (omp_get_thread_num() == 0)
      for (int t = 0; t < 32; ++t)
        in_barrier += red[t];
  }
  /* kernel generic */
#pragma omp target teams num_teams(2) map(tofrom : generic, seq)
  {
    int base = omp_get_team_num() + 1;
#pragma omp parallel num_threads(4)
#pragma omp atomic
    generic += base;
    /* The main thread between two regions: what it writes, the second region's threads read. */
    base *= 100;
    if (omp_get_team_num() == 1)
      seq[0] = omp_get_thread_num() * 1000 + omp_get_num_threads();
#pragma omp parallel num_threads(3)
    {
#pragma omp atomic
      generic += base;
      if (omp_get_team_num() == 1 && omp_get_thread_num() == 2)
        seq[1] = omp_get_num_threads();
    }
  }
  /* kernel generic_barrier */
#pragma omp target teams num_teams(2) map(tofrom : seq)
  {
    int mine[8];
#pragma omp parallel num_threads(8)
    {
      mine[omp_get_thread_num()] = omp_get_thread_num();
#pragma omp barrier
      if (omp_get_team_num() == 0 && omp_get_thread_num() == 0)
        seq[2] = mine[7];
    }
  }
  long sums[7] = {0};
  int dyn_ok = 1, fn_ok = 1;
  for (int i = 0; i < N; ++i) {
    sums[0] += who[i];
    sums[1] += size[i];
    sums[2] += team[i];
    sums[3] += dyn[i] / 10000;
    sums[4] += serial[i];
    dyn_ok &= dyn[i] % 10000 == i;
    fn_ok &= fn[i] == 2 * i;
  }
  printf("who %ld size %ld team %ld dyn %ld dyn_ok %d serial %ld fn %d total %d barrier %d generic %d "
         "main %d second %d generic_barrier %d\n",
         sums[0], sums[1], sums[2], sums[3], dyn_ok, sums[4], fn_ok, total, in_barrier, generic, seq[0], seq[1],
         seq[2]);
  return 0;
}
"""

TRACE = re.compile(r"gpu-kernel image=\S+ kernel=\S+_l(\d+) blocks=(\w+) reason=(.*)")


def kernel_lines(source):
    """{name: the line of its construct} for each `/* kernel NAME */` (Fortran: `! kernel NAME`)
    of `source`."""
    lines = {}
    for number, text in enumerate(source.split("\n"), start=1):
        m = re.search(r"/\* kernel (\w+) \*/|^\s*! kernel (\w+)$", text)
        if m:
            lines[m.group(1) or m.group(2)] = number + 1
    return lines


def plans(stderr, source):
    """{kernel name: (blocks, reason)} from the image trace."""
    by_line = {line: name for name, line in kernel_lines(source).items()}
    found = {}
    for m in TRACE.finditer(stderr):
        found[by_line.get(int(m.group(1)), m.group(1))] = (m.group(2), m.group(3).strip())
    return found


REGION_TRACE = re.compile(r"gpu-region image=\S+ kernel=\S+_l(\d+) region=\S+ threads=rounds")


def round_regions(stderr, source):
    """The kernels (by name) with a parallel region whose threads run in rounds."""
    by_line = {line: name for name, line in kernel_lines(source).items()}
    return {by_line.get(int(m.group(1)), m.group(1)) for m in REGION_TRACE.finditer(stderr)}


@pytest.mark.parametrize("arch", ARCHS)
def test_spmd_kernels_run_as_loops_and_compute_what_fibers_compute(offload, arch):
    exe = offload.compile(KERNELS, name="kernels.c", translate="pass", extra=["--gpu=" + arch])
    loops = offload.run(exe, backend="sim", env={"OMPSIM_TRACE": "image"})
    fibers = offload.run(exe, backend="sim", env={"OMPSIM_TRACE": "image", "OMPSIM_GPU_BLOCK_LOOPS": "0"})
    assert loops.returncode == 0, loops.stderr
    assert fibers.returncode == 0, fibers.stderr
    assert loops.stdout == fibers.stdout
    # What the program says, whatever the grid: every iteration's thread and team, each
    # region's size, the dynamic schedule's chunks, the serialized region (a team of one).
    fields = dict(zip(loops.stdout.split()[0::2], loops.stdout.split()[1::2]))
    assert fields["total"] == str(sum(range(3000)))
    assert fields["barrier"] == str(sum(range(32)))
    # Generic mode: each team's 4 threads add its base, then 3 threads the main thread's 100x.
    assert fields["generic"] == str(4 * (1 + 2) + 3 * (100 + 200))
    assert fields["main"] == "1"  # thread 0 of a team of one between the regions
    assert fields["second"] == "3"
    assert fields["generic_barrier"] == "7"
    assert fields["serial"] == "3000"
    assert fields["fn"] == "1"
    assert fields["dyn_ok"] == "1"  # the dynamic loop covered each iteration once
    got = plans(loops.stderr, KERNELS)
    for name in ("distribute", "dynamic", "serialized", "indirect", "generic"):
        assert got[name] == ("loops", ""), (name, got)
    # The team's reduction variable is each thread's own, which only the team's thread 0 writes
    # (its parallel reduction told it so): the region's threads run in rounds, the reduction's
    # barriers among them.
    assert got["reduction"] == ("loops", ""), got
    # A barrier in a region: the kernel runs as loops, the region's threads in rounds.
    assert got["barrier"] == ("loops", ""), got
    # clang -O1 makes this kernel Generic-SPMD: every thread runs its sequential part, which
    # stores only to the thread's own stack, so thread 0 runs it for all; its region's barrier
    # makes the region's threads run in rounds.
    assert got["generic_barrier"] == ("loops", ""), got
    assert round_regions(loops.stderr, KERNELS) == {"reduction", "barrier", "generic_barrier"}
    forced = plans(fibers.stderr, KERNELS)
    assert set(forced.values()) == {("fibers", "OMPSIM_GPU_BLOCK_LOOPS=0")}, forced


@pytest.mark.parametrize("arch", ARCHS)
def test_a_kernel_runs_as_loops_under_the_checker_too(offload, arch):
    exe = offload.compile(KERNELS, name="kernels.c", translate="pass", extra=["--gpu=" + arch])
    checked = offload.run(exe, backend="sim", env={"OMPSIM_TRACE": "image", "OMPSIM_CHECK": "1"})
    plain = offload.run(exe, backend="sim")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == plain.stdout
    assert plans(checked.stderr, KERNELS)["distribute"] == ("loops", "")


RACE_IN_A_REGION = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int seen = 0;
#pragma omp target parallel num_threads(64) map(tofrom : seen)
  {
    static int tile[64];
#pragma omp allocate(tile) allocator(omp_pteam_mem_alloc)
    tile[omp_get_thread_num()] = omp_get_thread_num();
    /* no barrier: thread 0 reads what thread 63 writes */
    if (omp_get_thread_num() == 0)
      seen = tile[63];
  }
  printf("seen %d\n", seen);
  return 0;
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_a_race_in_a_region_run_as_loops_is_named_as_with_fibers(offload, arch):
    exe = offload.compile(RACE_IN_A_REGION, name="race.c", translate="pass", extra=["--gpu=" + arch])
    loops = offload.run(exe, backend="sim", env={"OMPSIM_CHECK": "1", "OMPSIM_TRACE": "image"})
    fibers = offload.run(exe, backend="sim", env={"OMPSIM_CHECK": "1", "OMPSIM_GPU_BLOCK_LOOPS": "0"})
    assert "blocks=loops" in loops.stderr, loops.stderr
    assert fibers.returncode != 0 and loops.returncode == fibers.returncode, (loops.stderr, fibers.stderr)
    line = [ln for ln in fibers.stderr.splitlines() if "race" in ln or "unwritten" in ln]
    assert line, fibers.stderr
    assert line[0] in loops.stderr, (line, loops.stderr)


ASSERT_IN_A_REGION = r"""
#include <assert.h>
#include <stdio.h>
int main(void) {
  int a[1000];
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(64) map(from : a)
  for (int i = 0; i < 1000; ++i) {
    assert(i != 777);
    a[i] = i;
  }
  printf("%d\n", a[999]);
  return 0;
}
"""


def failing_both_ways(offload, source, name, arch, marker, extra=(), env=None):
    """Builds `source` and runs it without fibers (the image trace says `marker`) and as fibers:
    both must fail alike. Gives the two runs."""
    exe = offload.compile(source, name=name, translate="pass", extra=["--gpu=" + arch] + list(extra))
    without = offload.run(exe, backend="sim", env=dict(env or {}, OMPSIM_TRACE="image"))
    fibers = offload.run(exe, backend="sim", env=dict(env or {}, OMPSIM_GPU_BLOCK_LOOPS="0"))
    assert marker in without.stderr, without.stderr
    assert fibers.returncode != 0 and without.returncode == fibers.returncode, (without.stderr, fibers.stderr)
    return without, fibers


def fibers_line(fibers, without, needle):
    """The one line of the fibers' run that holds `needle`, which the other run gives too."""
    line = [ln for ln in fibers.stderr.splitlines() if needle in ln]
    assert len(line) == 1, fibers.stderr
    assert line[0] in without.stderr.splitlines(), (line, without.stderr)
    return line[0]


@pytest.mark.parametrize("arch", ARCHS)
def test_a_fault_in_a_region_run_as_loops_names_the_block_and_thread_fibers_name(offload, arch):
    loops, fibers = failing_both_ways(offload, ASSERT_IN_A_REGION, "assert.c", arch, "blocks=loops")
    assert re.search(r"\(block \d+, thread \d+\)", fibers_line(fibers, loops, "Assertion"))


#: ompx_bare kernels: each follows a line `/* kernel NAME */`.
BARE_KERNELS = r"""
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
int main(void) {
  enum { B = 3, T = 128, N = B * T };
  static int scan[N], total[B], early[B], lanes[B];
  /* kernel scan */
#pragma omp target teams ompx_bare num_teams(B) thread_limit(T) map(from : scan, total)
  {
    static int tile[128];
#pragma omp allocate(tile) allocator(omp_pteam_mem_alloc)
    int t = ompx_thread_id_x(), b = ompx_block_id_x();
    int mine[4]; /* each thread's own, live across every barrier */
    for (int k = 0; k < 4; ++k)
      mine[k] = t * k + b;
    tile[t] = t + b * 1000;
    ompx_sync_block_acq_rel();
    for (int d = 1; d < T; d *= 2) { /* an inclusive scan, two barriers a step */
      int v = t >= d ? tile[t - d] : 0;
      ompx_sync_block_acq_rel();
      tile[t] += v;
      ompx_sync_block(0);
    }
    scan[b * T + t] = tile[t] + mine[3] - mine[2] - t;
    if (t == T - 1)
      total[b] = tile[t];
  }
  /* kernel early */
#pragma omp target teams ompx_bare num_teams(B) thread_limit(T) map(from : early)
  {
    static int count[1];
#pragma omp allocate(count) allocator(omp_pteam_mem_alloc)
    int t = ompx_thread_id_x();
    if (t == 0)
      count[0] = 0;
    ompx_sync_block_acq_rel();
    if (t < 100) { /* the others finish: they no longer count at the block's barrier */
#pragma omp atomic
      count[0] += 1;
      ompx_sync_block_divergent(0);
      if (t == 0)
        early[ompx_block_id_x()] = count[0];
    }
  }
  /* kernel shuffle */
#pragma omp target teams ompx_bare num_teams(B) thread_limit(T) map(from : lanes)
  {
    int t = ompx_thread_id_x();
    int v = ompx_shfl_down_sync_i(~0ULL, t, 1, 32);
    if (t == 0)
      lanes[ompx_block_id_x()] = v;
  }
  int ok = 1;
  for (int i = 0; i < N; ++i)
    ok &= scan[i] == (i % T + 1) * (i % T + 2 * (i / T) * 1000) / 2;
  printf("scan_ok %d total %d %d %d early %d %d %d lane %d\n", ok, total[0], total[1], total[2], early[0],
         early[1], early[2], lanes[2]);
  return 0;
}
"""


def passing_three_ways(offload, source, name, arch, opt):
    """Builds `source` at `opt` and runs it without fibers (traced), as fibers, and under the
    checker: each must pass, each printing the same. Gives the first run."""
    exe = offload.compile(source, name=name, translate="pass", extra=["--gpu=" + arch, opt])
    rounds = offload.run(exe, backend="sim", env={"OMPSIM_TRACE": "image"})
    fibers = offload.run(exe, backend="sim", env={"OMPSIM_GPU_BLOCK_LOOPS": "0"})
    checked = offload.run(exe, backend="sim", env={"OMPSIM_CHECK": "1"})
    for run in (rounds, fibers, checked):
        assert run.returncode == 0, run.stderr
    assert fibers.stdout == rounds.stdout and checked.stdout == rounds.stdout
    return rounds


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("arch", ARCHS)
def test_bare_kernels_run_in_rounds_and_compute_what_fibers_compute(offload, arch, opt):
    rounds = passing_three_ways(offload, BARE_KERNELS, "bare.c", arch, opt)
    # Each block's scan of its 128 values, its total, the 100 threads that met the last barrier
    # (the 28 that finished before it do not count), and lane 1's value at lane 0.
    assert rounds.stdout == "scan_ok 1 total 8128 136128 264128 early 100 100 100 lane 1\n"
    got = plans(rounds.stderr, BARE_KERNELS)
    # At -O0 the region's barriers are its outlined function's calls, which the split inlines.
    assert got["scan"] == ("rounds", "") and got["early"] == ("rounds", ""), got
    assert got["shuffle"][0] == "fibers", got
    assert "ompx_bare mode: it may reach 'ompx_shfl_down_sync_i'" in got["shuffle"][1], got


RACE_BETWEEN_BARRIERS = r"""
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int seen = 0;
#pragma omp target teams ompx_bare num_teams(1) thread_limit(64) map(tofrom : seen)
  {
    static int tile[64];
#pragma omp allocate(tile) allocator(omp_pteam_mem_alloc)
    int t = ompx_thread_id_x();
    tile[t] = t;
    ompx_sync_block_acq_rel();
    tile[t] += 1;
    /* no barrier: thread 0 reads what thread 63 writes */
    if (t == 0)
      seen = tile[63];
  }
  printf("seen %d\n", seen);
  return 0;
}
"""

DIVERGENT_BARRIERS = r"""
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int x = 0;
#pragma omp target teams ompx_bare num_teams(1) thread_limit(64) map(tofrom : x)
  {
    if (ompx_thread_id_x() % 2)
      ompx_sync_block_acq_rel();
    else
      ompx_sync_block_acq_rel();
    x = 1;
  }
  printf("x %d\n", x);
  return 0;
}
"""

ASSERT_IN_A_ROUND = r"""
#include <assert.h>
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int x = 0;
#pragma omp target teams ompx_bare num_teams(3) thread_limit(64) map(tofrom : x)
  {
    ompx_sync_block_acq_rel();
    assert(!(ompx_block_id_x() == 1 && ompx_thread_id_x() == 37));
    ompx_sync_block_acq_rel();
    x = 1;
  }
  printf("x %d\n", x);
  return 0;
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_a_race_between_two_barriers_of_a_round_is_named_as_with_fibers(offload, arch):
    rounds, fibers = failing_both_ways(offload, RACE_BETWEEN_BARRIERS, "race.c", arch, "blocks=rounds",
                                       env={"OMPSIM_CHECK": "1"})
    fibers_line(fibers, rounds, "races with thread 0's read")


def barrier_groups(stderr):
    """The divergence line's thread groups, each barrier named only as ompx_sync_block."""
    line = [ln for ln in stderr.splitlines() if "its threads wait at different barriers" in ln]
    assert len(line) == 1, stderr
    return re.sub(r"ompx_sync_block (called from [^;]*|at [^;]*)", "ompx_sync_block", line[0])


@pytest.mark.parametrize("arch", ARCHS)
def test_threads_of_a_round_at_different_barriers_are_named_as_with_fibers(offload, arch):
    rounds, fibers = failing_both_ways(offload, DIVERGENT_BARRIERS, "diverge.c", arch, "blocks=rounds",
                                       extra=["-O2", "-g"])
    assert barrier_groups(rounds.stderr) == barrier_groups(fibers.stderr)
    assert "threads 0, 2, 4, 6 and 28 more wait at ompx_sync_block" in barrier_groups(rounds.stderr)
    # The split names each barrier's line where the build has them.
    assert re.search(r"wait at ompx_sync_block at diverge\.c:\d+:\d+; threads 1, 3, 5, 7", rounds.stderr), rounds.stderr


@pytest.mark.parametrize("arch", ARCHS)
def test_an_assert_in_a_round_names_the_block_and_thread_fibers_name(offload, arch):
    rounds, fibers = failing_both_ways(offload, ASSERT_IN_A_ROUND, "assert_round.c", arch, "blocks=rounds")
    assert "(block 1, thread 37)" in fibers_line(fibers, rounds, "Assertion")


#: Parallel regions with barriers: each kernel runs as loops, each region's threads in rounds.
REGIONS = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  enum { T = 64 };
  int scan[T], gen[3 * T], single = 0;
  /* kernel spmd */
#pragma omp target parallel num_threads(T) map(from : scan)
  {
    static int tile[T];
#pragma omp allocate(tile) allocator(omp_pteam_mem_alloc)
    int t = omp_get_thread_num();
    tile[t] = t + 1;
    for (int d = 1; d < T; d *= 2) {
#pragma omp barrier
      int v = t >= d ? tile[t - d] : 0;
#pragma omp barrier
      tile[t] += v;
    }
#pragma omp barrier
    scan[t] = tile[t];
  }
  /* kernel generic */
#pragma omp target teams num_teams(3) thread_limit(T) map(from : gen) map(tofrom : single)
  {
    int base = omp_get_team_num() * T;
#pragma omp parallel num_threads(T)
    {
      int t = omp_get_thread_num();
#pragma omp for
      for (int i = 0; i < T; ++i)
        gen[base + i] = i;
      /* the loop's implicit barrier: every thread sees every element */
      int next = gen[base + (t + 1) % T];
#pragma omp single
      {
#pragma omp atomic
        single += 1;
      }
      gen[base + t] = next * 100 + omp_get_num_threads();
    }
  }
  int ok = 1;
  for (int t = 0; t < T; ++t)
    ok &= scan[t] == (t + 1) * (t + 2) / 2;
  long sum = 0;
  for (int i = 0; i < 3 * T; ++i)
    sum += gen[i];
  printf("scan_ok %d gen %ld single %d\n", ok, sum, single);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("arch", ARCHS)
def test_regions_with_barriers_run_in_rounds_and_compute_what_fibers_compute(offload, arch, opt):
    rounds = passing_three_ways(offload, REGIONS, "regions.c", arch, opt)
    # Each prefix sum; each team's loop stored 0..63, read by its neighbour after the barrier.
    total = 3 * sum(((t + 1) % 64) * 100 + 64 for t in range(64))
    assert rounds.stdout == "scan_ok 1 gen %d single 3\n" % total
    got = plans(rounds.stderr, REGIONS)
    assert got["spmd"] == ("loops", "") and got["generic"] == ("loops", ""), got
    assert round_regions(rounds.stderr, REGIONS) == {"spmd", "generic"}


REDUCTIONS = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  enum { N = 5000 };
  static double a[N];
  for (int i = 0; i < N; ++i)
    a[i] = 1.0 / (i + 1) * ((i % 3) ? 1.0 : -3.0);
  /* Floating-point sums within a team: each bit shows the order the threads' values combine in. */
  double sum = 0, psum = 0, gteam[3] = {0, 0, 0};
  float fsum = 0;
  int most = -1;
  long isum = 0;
  /* kernel spmd */
#pragma omp target teams distribute parallel for num_teams(1) thread_limit(96) reduction(+ : sum) \
    map(to : a) map(tofrom : sum)
  for (int i = 0; i < N; ++i)
    sum += a[i];
  /* kernel teams */
#pragma omp target teams distribute parallel for num_teams(5) thread_limit(64) reduction(max : most) \
    reduction(+ : isum) map(tofrom : most, isum)
  for (int i = 0; i < N; ++i) {
    most = most > (i * 7919) % 4099 ? most : (i * 7919) % 4099;
    isum += i;
  }
  /* kernel generic */
#pragma omp target teams num_teams(3) thread_limit(64) map(to : a) map(tofrom : gteam)
  {
    double mine = 0;
    int team = omp_get_team_num();
#pragma omp parallel for num_threads(40) reduction(+ : mine)
    for (int i = 0; i < N; ++i)
      mine += a[i] * (team + 1);
    gteam[team] = mine;
  }
  /* kernel parallel */
#pragma omp target parallel for num_threads(50) reduction(+ : psum, fsum) map(to : a) map(tofrom : psum, fsum)
  for (int i = 0; i < N; ++i) {
    psum += a[i] * a[i];
    fsum += (float)a[i];
  }
  printf("sum %a most %d isum %ld gteam %a %a %a psum %a fsum %a\n", sum, most, isum, gteam[0], gteam[1], gteam[2],
         psum, (double)fsum);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("arch", ARCHS)
def test_reductions_run_in_rounds_and_combine_what_fibers_combine(offload, arch, opt):
    # Printed to the last bit: a reduction in rounds combines the threads' values in the order
    # fibers combine them (thread 0's, then each other thread's in turn).
    rounds = passing_three_ways(offload, REDUCTIONS, "reductions.c", arch, opt)
    fields = dict(zip(rounds.stdout.split()[0::2], rounds.stdout.split()[1::2]))
    a = [1.0 / (i + 1) * (1.0 if i % 3 else -3.0) for i in range(5000)]
    assert float.fromhex(fields["sum"]) == pytest.approx(sum(a), rel=1e-12)
    assert float.fromhex(fields["psum"]) == pytest.approx(sum(x * x for x in a), rel=1e-12)
    assert fields["most"] == str(max(i * 7919 % 4099 for i in range(5000)))
    assert fields["isum"] == str(sum(range(5000)))
    got = plans(rounds.stderr, REDUCTIONS)
    # The team's thread 0 alone writes the team's copy of a teams reduction's variable, behind
    # its parallel reduction's answer; the teams reduction's combining, behind its own.
    expected = {"spmd", "teams", "generic", "parallel"}
    if opt == "-O0":
        # Unoptimized, the kernel hands the region its copy through a stack slot of its own.
        expected -= {"spmd", "teams"}
        for name in ("spmd", "teams"):
            assert got[name][0] == "fibers", got
            assert "is passed the address of a variable of the kernel's own" in got[name][1], got
    for name in expected:
        assert got[name] == ("loops", ""), (name, got)
    assert round_regions(rounds.stderr, REDUCTIONS) == expected


FORTRAN_REDUCTIONS = r"""
program red
  use omp_lib
  implicit none
  integer :: i, imax, isum, psum
  imax = -1
  isum = 0
  psum = 0
  ! kernel teams
  !$omp target teams distribute num_teams(3) reduction(max: imax) reduction(+: isum) map(tofrom: imax, isum)
  do i = 1, 1000
    imax = max(imax, mod(i * 7919, 4099))
    isum = isum + i
  end do
  !$omp end target teams distribute
  ! kernel parallel
  !$omp target teams distribute parallel do num_teams(2) reduction(+: psum) map(tofrom: psum)
  do i = 1, 1000
    psum = psum + 2 * i
  end do
  !$omp end target teams distribute parallel do
  print '(A,I0,A,I0,A,I0)', 'max ', imax, ' sum ', isum, ' psum ', psum
end program
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_flang_reductions_run_as_loops_and_in_rounds(offload, arch):
    # flang-22's teams reduction: the main thread reaches the parallel reduction at the teams
    # level (a team of one there, which returns without waiting), and the image links the
    # runtime's entries in llvm.used, which no pointer calls. Its parallel loop hands the loop's
    # body to a runtime entry, which calls that body alone; the region's parallel and teams
    # reductions leave the compiler's inter-warp copy (and its barriers) alone.
    rounds = passing_three_ways(offload, FORTRAN_REDUCTIONS, "reductions.f90", arch, "-O2")
    assert rounds.stdout.split() == ["max", str(max(i * 7919 % 4099 for i in range(1, 1001))), "sum", "500500",
                                     "psum", "1001000"]
    got = plans(rounds.stderr, FORTRAN_REDUCTIONS)
    assert got["teams"] == ("loops", "") and got["parallel"] == ("loops", ""), got
    assert round_regions(rounds.stderr, FORTRAN_REDUCTIONS) == {"parallel"}


GUARDED = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  enum { T = 64, TEAMS = 8, N = T * TEAMS };
  static float in_data[N], out_data[N];
  float *in = in_data, *out = out_data;
  int firsts[TEAMS];
  for (int i = 0; i < N; ++i)
    in[i] = (float)(i % 17);
  /* kernel tile */
#pragma omp target teams num_teams(TEAMS) thread_limit(T) map(to : in[0:N]) map(from : out[0:N])
  {
    float tile[T];
#pragma omp parallel num_threads(T)
    {
      int lid = omp_get_thread_num();
      int gid = omp_get_team_num() * T + lid;
      tile[lid] = in[gid];
#pragma omp barrier
      float s = tile[lid];
      if (lid > 0)
        s += tile[lid - 1];
      if (lid < T - 1)
        s += tile[lid + 1];
      out[gid] = s;
    }
  }
  /* kernel first */
#pragma omp target teams num_teams(TEAMS) thread_limit(T) map(from : firsts)
  {
    int team = omp_get_team_num();
    int seen = -1;
#pragma omp parallel num_threads(T)
    {
      if (omp_get_thread_num() == 0)
        seen = omp_get_num_threads();
    }
    firsts[team] = seen;
  }
  double sum = 0;
  for (int i = 0; i < N; ++i)
    sum += out[i];
  int ok = 1;
  for (int t = 0; t < TEAMS; ++t)
    ok &= firsts[t] == T;
  printf("sum %.1f firsts_ok %d\n", sum, ok);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("arch", ARCHS)
def test_a_team_local_tile_kernel_runs_as_loops_with_its_region_in_rounds(offload, arch, opt):
    # HeCBench's form: a team-local array, a parallel region that fills it, a barrier, and each
    # thread reading its neighbours. At -O2 openmp-opt makes the kernel Generic-SPMD, thread 0
    # alone storing the kernel's pointers where the team's threads read them (its guard, then
    # __kmpc_barrier_simple_spmd): thread 0 runs that code alone here too.
    rounds = passing_three_ways(offload, GUARDED, "guarded.c", arch, opt)
    values = [float(i % 17) for i in range(512)]
    total = sum(values[g] + (values[g - 1] if g % 64 else 0) + (values[g + 1] if g % 64 != 63 else 0)
                for g in range(512))
    assert rounds.stdout == "sum %.1f firsts_ok 1\n" % total
    got = plans(rounds.stderr, GUARDED)
    assert got["tile"] == ("loops", "") and got["first"] == ("loops", ""), got
    assert round_regions(rounds.stderr, GUARDED) == {"tile"}


EARLY_END = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int x = 0;
#pragma omp target parallel num_threads(32) map(tofrom : x)
  {
    if (omp_get_thread_num() != 3) {
#pragma omp barrier
    }
    x = 1;
  }
  printf("x %d\n", x);
  return 0;
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_a_thread_that_ends_a_region_run_in_rounds_early_is_named_as_with_fibers(offload, arch):
    rounds, fibers = failing_both_ways(offload, EARLY_END, "early_end.c", arch, "threads=rounds")
    line = fibers_line(fibers, rounds, "wait at different barriers")
    assert re.search(r"thread 3 waits at the end of the parallel region at \S*early_end\.c:6", line), line
