"""Barriers a GPU hangs on or passes wrongly, named on the virtual GPU (docs/gpu-checks.md): a
block whose threads wait at different program barriers, or at a barrier that can never complete,
ends its launch with one line that names the kernel, the block, each barrier by its source line
(-g) and which threads wait where. Always on, not only under --check. A program whose barriers
every thread of each team meets runs as on stock's host plugin."""
import os
import re

import pytest

from reliability_helpers import run

pytestmark = pytest.mark.e2e

ARCHS = ["sm_90", "gfx90a"]
PROGRAM = "barriers.c"


def kernel(fn):
    return r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_%s_l\d+" % fn


def line_of(text, after=None):
    """The line of programs/barriers.c that holds `text` (the first after the line holding
    `after`, when given)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", PROGRAM)) as f:
        lines = f.read().splitlines()
    start = 0
    if after is not None:
        start = next(i for i, t in enumerate(lines) if after in t) + 1
    return next(i + 1 for i, t in enumerate(lines[start:], start) if text in t)


def at(text, after=None):
    return r"\S*barriers\.c:%d:\d+" % line_of(text, after)


def stop_line(exe, mode):
    return run(exe, "sim", [mode]).single_error()


def assert_apart(line, fn, *groups):
    """`line` says that kernel `fn`'s block 0 stopped with its threads at different barriers,
    each of `groups` a "threads ... wait at ..." pattern."""
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0: its threads wait at different barriers, which a GPU hangs on "
        r"or passes wrongly: %s; every thread of a team must meet the same barriers in the same order"
        % (kernel(fn), "; ".join(groups)), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_half_a_team_at_a_barrier_names_the_barrier_and_the_regions_end(gpu_built, arch):
    assert_apart(stop_line(gpu_built(PROGRAM, arch), "half"), "half",
                 r"threads 0-31 wait at the barrier at " + at("#pragma omp barrier", "static int half"),
                 r"threads 32-63 wait at the end of the parallel region at " +
                 at("#pragma omp parallel", "static int half"))


@pytest.mark.parametrize("arch", ARCHS)
def test_two_barriers_met_apart_are_both_named_with_their_threads(gpu_built, arch):
    assert_apart(stop_line(gpu_built(PROGRAM, arch), "split"), "split",
                 r"threads 0, 2, 4, 6 and 28 more wait at the barrier at " + at("#pragma omp barrier", "} else {"),
                 r"threads 1, 3, 5, 7 and 28 more wait at the barrier at " +
                 at("#pragma omp barrier", "static int split"))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_loop_whose_threads_meet_its_barrier_unequally_often(gpu_built, arch):
    assert_apart(stop_line(gpu_built(PROGRAM, arch), "uneven"), "uneven",
                 r"threads 0-31 wait at the end of the parallel region at " +
                 at("#pragma omp parallel", "static int uneven"),
                 r"threads 32-63 wait at the barrier at " + at("#pragma omp barrier", "static int uneven"))


def test_without_debug_information_each_barrier_is_named_by_its_call(gpu_built):
    call = (r"the barrier called from dev:__omp_offloading_\w+_split_l\d+_omp_outlined\w*\+0x[0-9a-f]+ "
            r"\(0x[0-9a-f]+\) \(build with -g to name its line\)")
    assert_apart(stop_line(gpu_built(PROGRAM, "sm_90", ["-g0"]), "split"), "split",
                 r"threads 0, 2, 4, 6 and 28 more wait at " + call, r"threads 1, 3, 5, 7 and 28 more wait at " + call)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_generic_kernels_barrier_that_can_never_complete_says_where_every_thread_is(gpu_built, arch):
    # The team's main thread waits for its region's end in the runtime; the main warp's
    # other lanes have left the kernel (32 of them on nvptx64, 64 on amdgcn).
    line = stop_line(gpu_built(PROGRAM, arch), "generic")
    last = 95 if arch == "sm_90" else 127
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0: a barrier can never complete: threads 0-15 wait at the "
        r"barrier at %s \(a barrier of 64 threads\); threads 16-63 wait at the end of the parallel region "
        r"at %s; thread 64 waits at a barrier of the GPU device runtime; threads 65-%d have finished"
        % (kernel("generic"), at("#pragma omp barrier", "static int generic"),
           at("#pragma omp parallel", "static int generic"), last), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_barriers_every_thread_meets_run_as_on_stock(gpu_built, arch):
    # A region of fewer threads than its block, a barrier of a serialized nested region that
    # only some threads reach, a loop's implicit barrier: each team checks what it got.
    stock = run(gpu_built(PROGRAM, "x86_64"), "host-upstream", ["clean"])
    assert stock.rc == 0 and stock.out == "clean 0\n", stock.err
    r = run(gpu_built(PROGRAM, arch), "sim", ["clean"])
    assert (r.rc, r.out) == (0, stock.out), r.err
    assert "ompsim:" not in r.err, r.err
