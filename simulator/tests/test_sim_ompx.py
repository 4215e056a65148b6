"""The ompx kernel-language API (clang's <ompx.h>) answers as a GPU does on ompsim's devices:
`ompsim cc` compiles device code against ompsim's <ompx.h>, whose functions the device runtime
defines (block = team, a block's threads = the team's threads, warps of 32 lanes), while the
same binary keeps clang-22's host answers under stock's host plugin (docs/ompx.md)."""
import re

import pytest

pytestmark = pytest.mark.e2e

TEAMS, THREADS = 3, 5

IDS = r"""
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
enum { Teams = 3, Threads = 5 };
int main(void) {
  int seen[Teams * Threads][8] = {{0}};
#pragma omp target teams num_teams(Teams) thread_limit(Threads) map(tofrom : seen)
#pragma omp parallel
  {
    int i = ompx_block_id_x() * ompx_block_dim_x() + ompx_thread_id_x();
    if (i < Teams * Threads) {
      int *s = seen[i];
      s[0] = ompx_block_id_x(); s[1] = ompx_thread_id_x(); s[2] = ompx_block_dim_x(); s[3] = ompx_grid_dim_x();
      s[4] = ompx_block_id_y() + ompx_block_id_z() + ompx_thread_id_y() + ompx_thread_id_z();
      s[5] = ompx_block_dim_y() * ompx_block_dim_z() * ompx_grid_dim_y() * ompx_grid_dim_z();
      s[6] = 1;
    }
  }
  for (int i = 0; i < Teams * Threads; ++i)
    printf("%d: %s block %d thread %d of %d, grid %d, yz ids %d dims %d\n", i, seen[i][6] ? "ran" : "--",
           seen[i][0], seen[i][1], seen[i][2], seen[i][3], seen[i][4], seen[i][5]);
  int bare[Teams][Threads] = {{0}};
#pragma omp target teams ompx_bare num_teams(Teams) thread_limit(Threads) map(tofrom : bare)
  {
    bare[ompx_block_id_x()][ompx_thread_id_x()] += 1 + 10 * ompx_block_dim_x();
    ompx_sync_block(ompx_seq_cst);
  }
  for (int b = 0; b < Teams; ++b) {
    printf("bare block %d:", b);
    for (int t = 0; t < Threads; ++t)
      printf(" %d", bare[b][t]);
    printf("\n");
  }
  return 0;
}
"""


def expected_ids():
    lines = ["%d: ran block %d thread %d of %d, grid %d, yz ids 0 dims 1" % (b * THREADS + t, b, t, THREADS, TEAMS)
             for b in range(TEAMS) for t in range(THREADS)]
    # Built with the pass plugin, an ompx_bare body runs once on every thread of every block.
    return lines + ["bare block %d:%s" % (b, " %d" % (1 + 10 * THREADS) * THREADS) for b in range(TEAMS)]


def test_blocks_are_teams_and_threads_are_the_teams_threads(offload):
    exe = offload.compile(IDS, name="ids.c", translate="pass")
    r = offload.run(exe, backend="sim")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == expected_ids(), r.stdout


HOST_ANSWERS = r"""
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int a[10] = {0};
#pragma omp target teams num_teams(2) thread_limit(1) map(tofrom : a)
  if (omp_get_team_num() == 1) {
    a[0] = ompx_block_id_x(); a[1] = ompx_grid_dim_x(); a[2] = ompx_thread_id_x(); a[3] = ompx_block_dim_x();
    a[4] = ompx_thread_id_y(); a[5] = ompx_thread_id_z(); a[6] = ompx_block_dim_y(); a[7] = ompx_block_dim_z();
    a[8] = ompx_block_id_z(); a[9] = ompx_grid_dim_y();
    ompx_sync_block_divergent(ompx_relaxed);
  }
  for (int i = 0; i < 10; ++i)
    printf("%d ", a[i]);
  printf("\n");
  return 0;
}
"""


def test_stock_host_plugin_keeps_clangs_host_answers(offload):
    # The same program built with clang-22 alone (clang's <ompx.h> on both sides) and by
    # `ompsim cc`: under stock libomptarget both give clang's host answers (block id 0, grid 1,
    # ids and sizes from parallel levels, -1 where there are none), on sim the GPU's.
    ours = offload.compile(HOST_ANSWERS, name="answers.c", translate="pass")
    stock_ours = offload.run(ours, backend="host-upstream")
    assert stock_ours.returncode == 0, stock_ours.stderr
    clangs = offload.compile(HOST_ANSWERS, name="answers_clang.c", translate="native")
    stock_clangs = offload.run(clangs, backend="host-upstream")
    assert stock_clangs.returncode == 0, stock_clangs.stderr
    assert stock_ours.stdout == stock_clangs.stdout == "0 1 -1 -1 -1 -1 -1 -1 0 1 \n", stock_ours.stdout
    sim = offload.run(ours, backend="sim")
    assert sim.returncode == 0, sim.stderr
    assert sim.stdout == "1 2 0 1 0 0 1 1 0 1 \n", sim.stdout


SYNC_AND_WARPS = r"""
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
enum { Threads = 40 };
int main(void) {
  int neighbour[Threads] = {0}, shfl_i[Threads], shfl_w8[Threads];
  long shfl_l[Threads];
  float shfl_f[Threads];
  double shfl_d[Threads];
  unsigned long ballot[Threads], ballot_masked[Threads];
  int n = 0;
#pragma omp target teams num_teams(1) thread_limit(Threads) \
    map(from : neighbour, shfl_i, shfl_w8, shfl_l, shfl_f, shfl_d, ballot, ballot_masked, n)
#pragma omp parallel
  {
    static int slots[Threads];
    int t = ompx_thread_id_x();
    if (t == 0)
      n = ompx_block_dim_x();
    slots[t] = 100 + t;
    ompx_sync_block_acq_rel();
    neighbour[t] = slots[(t + 1) % ompx_block_dim_x()];
    shfl_i[t] = ompx_shfl_down_sync_i(~0UL, 10 * t, 1, 32);
    shfl_w8[t] = ompx_shfl_down_sync_i(~0UL, 10 * t, 3, 8);
    shfl_l[t] = ompx_shfl_down_sync_l(~0UL, 10000000000L + t, 16, 32);
    shfl_f[t] = ompx_shfl_down_sync_f(~0UL, 0.5f * t, 2, 32);
    shfl_d[t] = ompx_shfl_down_sync_d(~0UL, 0.25 * t, 31, 32);
    ballot[t] = ompx_ballot_sync(~0UL, t % 3 == 0);
    ballot_masked[t] = ompx_ballot_sync(0xffUL, 1);
  }
  printf("threads %d\n", n);
  for (int t = 0; t < n; ++t)
    printf("%d: %d %d %d %ld %g %g %lx %lx\n", t, neighbour[t], shfl_i[t], shfl_w8[t], shfl_l[t], shfl_f[t],
           shfl_d[t], ballot[t], ballot_masked[t]);
  return 0;
}
"""


def expected_sync_and_warps(threads=40, warp=32):
    def down(t, delta, width, value):
        lane, base = t % warp, t - t % warp
        lanes = min(threads - base, warp)
        src = lane + delta
        seg = lane - lane % width
        return value(base + src) if src < seg + width and src < lanes else value(t)

    def ballot(t, pred, mask):
        base = t - t % warp
        return sum(1 << l for l in range(min(threads - base, warp)) if pred(base + l) and mask >> l & 1)

    out = []
    for t in range(threads):
        out.append("%d: %d %d %d %d %s %s %x %x" % (
            t, 100 + (t + 1) % threads, down(t, 1, 32, lambda s: 10 * s), down(t, 3, 8, lambda s: 10 * s),
            down(t, 16, 32, lambda s: 10000000000 + s), "%g" % down(t, 2, 32, lambda s: 0.5 * s),
            "%g" % down(t, 31, 32, lambda s: 0.25 * s), ballot(t, lambda s: s % 3 == 0, (1 << 64) - 1),
            ballot(t, lambda s: True, 0xff)))
    return out


@pytest.mark.parametrize("backend,image", [("sim", "elf"), ("sim-ir", "ir"), ("ours-host", "elf")])
def test_sync_block_shuffles_and_ballots_follow_warps_of_32(offload, backend, image):
    exe = offload.compile(SYNC_AND_WARPS, name="warps.c", translate="pass", image=image)
    r = offload.run(exe, backend=backend)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    threads = int(lines.pop(0).split()[1])
    # sim runs the 40 threads thread_limit asks for, as a GPU would; ours-host runs kernels on
    # the host's libomp, which may form a smaller team (the answers follow the team it formed).
    assert threads == 40 if backend.startswith("sim") else 1 <= threads <= 40, threads
    assert lines == expected_sync_and_warps(threads), "\n".join(lines)
    if threads == 40:
        # Spot checks that do not lean on the model above: lane 31 of warp 0 keeps its own
        # value, the second warp holds threads 32..39 only, and its ballot has bits for 33, 36, 39.
        assert lines[31].split()[2] == "310" and lines[39].split()[2] == "390", lines
        assert lines[32].split()[7] == "%x" % 0b10010010, lines


SHUFFLE_CXX = r"""
#include <ompx.h>
#include <stdio.h>
int main() {
  int width = 0, got[64];
#pragma omp target teams num_teams(1) thread_limit(64) map(from : width, got)
#pragma omp parallel
  {
    int t = ompx::thread_id_x();
    if (t == 0)
      width = __warpSize();
    got[t] = ompx::shfl_down_sync(~0UL, t, 4); // width: the warp's
  }
  printf("warp %d:", width);
  for (int t = 0; t < 64; ++t)
    printf(" %d", got[t]);
  printf("\n");
}
"""


def test_cxx_api_and_warp_size(offload):
    exe = offload.compile(SHUFFLE_CXX, name="shfl.cpp", translate="pass")
    r = offload.run(exe, backend="sim")
    assert r.returncode == 0, r.stderr
    got = [t + 4 if t % 32 < 28 else t for t in range(64)]
    assert r.stdout == "warp 32: %s\n" % " ".join(map(str, got)), r.stdout


MULTI_DIM = r"""
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int ran = 0;
#pragma omp target teams ompx_bare num_teams(2, 3, 1) thread_limit(4, 2) map(tofrom : ran)
  ran = 1;
  printf("ran %d\n", ran);
  return 0;
}
"""


@pytest.mark.parametrize("backend", ["sim", "ours-host"])
def test_multi_dimensional_launch_of_a_kernel_clang_emitted_is_refused_with_one_line(offload, backend):
    # Without the pass plugin the bare kernel is clang-22's, which runs teams and threads in x only.
    exe = offload.compile(MULTI_DIM, name="multi.c", translate="native")
    r = offload.run(exe, backend=backend)
    assert r.returncode != 0 and r.stdout == "", (r.stdout, r.stderr)
    assert ("a launch of [2,3,1] teams of [4,2,1] threads is not supported: clang-22's code for the x86_64 "
            "offload target runs teams and threads in x only") in r.stderr, r.stderr
    assert "build with ompsim cc --translate=pass" in r.stderr, r.stderr


BARE_GRID = r"""
#include <ompx.h>
#include <stdio.h>
enum { GX = 3, GY = 2, GZ = 2, BX = 8, BY = 5, BZ = 1, Blocks = GX * GY * GZ, Threads = BX * BY * BZ };
int main(void) {
  int ids[Blocks][Threads][4], dims[6] = {0}, sums[Blocks], shfl[Blocks][Threads];
#pragma omp target teams ompx_bare num_teams(GX, GY, GZ) thread_limit(BX, BY, BZ) \
    map(from : ids, dims, sums, shfl)
  {
    static int slot[Blocks][Threads]; /* the block's threads meet here */
    int b = ompx_block_id_x() + GX * (ompx_block_id_y() + GY * ompx_block_id_z());
    int t = ompx_thread_id_x() + BX * (ompx_thread_id_y() + BY * ompx_thread_id_z());
    ids[b][t][0] = ompx_block_id_y();
    ids[b][t][1] = ompx_block_id_z();
    ids[b][t][2] = ompx_thread_id_y();
    ids[b][t][3] = ompx_thread_id_z();
    if (b == 0 && t == 0) {
      dims[0] = ompx_grid_dim_x(); dims[1] = ompx_grid_dim_y(); dims[2] = ompx_grid_dim_z();
      dims[3] = ompx_block_dim_x(); dims[4] = ompx_block_dim_y(); dims[5] = ompx_block_dim_z();
    }
    slot[b][t] = t;
    ompx_sync_block(ompx_seq_cst);
    /* after the barrier every thread of the block has written its slot */
    if (t == Threads - 1) {
      int s = 0;
      for (int i = 0; i < Threads; ++i)
        s += slot[b][i];
      sums[b] = s;
    }
    /* segments of 8 lanes: no lane reads past the block's 40 threads */
    shfl[b][t] = ompx_shfl_down_sync_i(~0UL, 1000 * b + t, 1, 8);
  }
  printf("grid %d %d %d, block %d %d %d\n", dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]);
  int bad = 0;
  for (int b = 0; b < Blocks; ++b) {
    bad += sums[b] != Threads * (Threads - 1) / 2;
    for (int t = 0; t < Threads; ++t) {
      bad += ids[b][t][0] != b / GX % GY || ids[b][t][1] != b / (GX * GY);
      bad += ids[b][t][2] != t / BX % BY || ids[b][t][3] != t / (BX * BY);
      bad += shfl[b][t] != 1000 * b + (t % 8 + 1 < 8 ? t + 1 : t);
    }
  }
  printf("wrong %d\n", bad);
  return 0;
}
"""


@pytest.mark.parametrize("backend", ["sim", "sim-ir", "ours-host"])
def test_bare_region_runs_on_every_thread_of_a_three_dimensional_grid(offload, backend):
    image = "ir" if backend == "sim-ir" else "elf"
    exe = offload.compile(BARE_GRID, name="bare_grid.c", translate="pass", image=image)
    r = offload.run(exe, backend=backend, env={"LIBOMPTARGET_INFO": "16"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "grid 3 2 2, block 8 5 1\nwrong 0\n", r.stdout
    if backend != "ours-host":  # ours-host prints what stock's host plugin prints
        assert "with [3,2,2] blocks and [8,5,1] threads in BARE mode" in r.stderr, r.stderr


BARE_ONCE_PER_TEAM = r"""
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int ran[4] = {0};
#pragma omp target teams ompx_bare num_teams(4) thread_limit(16) map(tofrom : ran)
  {
#pragma omp atomic
    ran[ompx_block_id_x()] += 1;
  }
  printf("%d %d %d %d\n", ran[0], ran[1], ran[2], ran[3]);
  return 0;
}
"""


def test_bare_region_keeps_clangs_behaviour_where_no_ompsim_device_runs_it(offload):
    # The pass-built image under stock's host plugin, and clang-22's own build on sim: the body
    # runs once per team, and its block id is 0 (clang's host answer: stock's plugin is no ompsim
    # device, and clang's own <ompx.h> compiles the host answers into the image).
    ours = offload.compile(BARE_ONCE_PER_TEAM, name="once.c", translate="pass")
    stock = offload.run(ours, backend="host-upstream")
    assert stock.returncode == 0, stock.stderr
    teams = int(stock.stdout.split()[0])
    assert 1 <= teams <= 4 and stock.stdout == "%d 0 0 0\n" % teams, stock.stdout
    clangs = offload.compile(BARE_ONCE_PER_TEAM, name="once_native.c", translate="native")
    sim = offload.run(clangs, backend="sim")
    assert sim.returncode == 0 and sim.stdout == "4 0 0 0\n", (sim.stdout, sim.stderr)
    assert offload.run(ours, backend="sim").stdout == "16 16 16 16\n"


def test_bare_region_at_O0_with_debug_info(offload):
    # With -g, clang-22 puts the kernel's code in `<kernel>_debug__`; at -O0 it stays there.
    exe = offload.compile(BARE_GRID, name="bare_grid_O0.c", translate="pass", extra=("-O0",))
    r = offload.run(exe, backend="sim")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "grid 3 2 2, block 8 5 1\nwrong 0\n", r.stdout


BIG_BLOCK = r"""
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int x = 0;
#pragma omp target teams ompx_bare num_teams(2) thread_limit(64, 32) map(tofrom : x)
  if (ompx_thread_id_x() == 0)
    x = 1;
  printf("x %d\n", x);
  return 0;
}
"""


@pytest.mark.parametrize("backend", ["sim", "ours-host"])
def test_bare_block_over_1024_threads_is_refused_with_one_line(offload, backend):
    exe = offload.compile(BIG_BLOCK, name="big_block.c", translate="pass")
    r = offload.run(exe, backend=backend)
    assert r.returncode != 0 and r.stdout == "", (r.stdout, r.stderr)
    lines = [l for l in r.stderr.splitlines() if l.startswith("ompsim:")]
    assert len(lines) == 1 and re.fullmatch(
        r"ompsim: kernel __omp_offloading_\w+_main_l\d+: an ompx_bare launch of \[2,1,1\] blocks of \[64,32,1\] "
        r"threads: a block has at most 1024 threads \(2048 asked for\), as on every GPU", lines[0]), r.stderr
