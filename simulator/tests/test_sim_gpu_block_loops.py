"""GPU kernels whose blocks run as loops (simulator/src/gpu/BlockLoops.h): the virtual GPU runs
an SPMD kernel that meets no barrier but at its parallel regions' ends with thread 0 alone
running the code outside the regions and each region's threads one after the other, as fibers
would run them, without a fiber each. A generic kernel runs the same way, its main thread on
thread 0's stack with the main thread's ids. A kernel with a barrier, a warp collective or a spin in
a region keeps fibers, and the image trace says why. Either way the program
computes what it computes with OMPSIM_GPU_BLOCK_LOOPS=0, which forces fibers."""
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
    """{name: the line of its construct} for each `/* kernel NAME */` of `source`."""
    lines = {}
    for number, text in enumerate(source.split("\n"), start=1):
        m = re.search(r"/\* kernel (\w+) \*/", text)
        if m:
            lines[m.group(1)] = number + 1
    return lines


def plans(stderr, source):
    """{kernel name: (blocks, reason)} from the image trace."""
    by_line = {line: name for name, line in kernel_lines(source).items()}
    found = {}
    for m in TRACE.finditer(stderr):
        found[by_line.get(int(m.group(1)), m.group(1))] = (m.group(2), m.group(3).strip())
    return found


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
    # The team's reduction variable: each thread's own, which its region writes.
    assert got["reduction"][0] == "fibers", got
    assert "is passed the address of a variable of the kernel's own, which it may write" in got["reduction"][1]
    assert got["barrier"][0] == "fibers" and "may reach" in got["barrier"][1], got
    # A barrier among a region's threads (clang -O1 makes this kernel Generic-SPMD, which keeps
    # fibers for that alone).
    assert got["generic_barrier"][0] == "fibers", got
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


@pytest.mark.parametrize("arch", ARCHS)
def test_a_fault_in_a_region_run_as_loops_names_the_block_and_thread_fibers_name(offload, arch):
    exe = offload.compile(ASSERT_IN_A_REGION, name="assert.c", translate="pass", extra=["--gpu=" + arch])
    loops = offload.run(exe, backend="sim", env={"OMPSIM_TRACE": "image"})
    fibers = offload.run(exe, backend="sim", env={"OMPSIM_GPU_BLOCK_LOOPS": "0"})
    assert "blocks=loops" in loops.stderr, loops.stderr
    assert loops.returncode != 0 and loops.returncode == fibers.returncode, (loops.stderr, fibers.stderr)
    line = [ln for ln in fibers.stderr.splitlines() if "Assertion" in ln]
    assert len(line) == 1 and re.search(r"\(block \d+, thread \d+\)", line[0]), fibers.stderr
    assert line[0] in loops.stderr.splitlines(), (line, loops.stderr)
