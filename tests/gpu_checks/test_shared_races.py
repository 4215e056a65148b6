"""Team-shared races and unwritten reads under the checker (docs/gpu-checks.md): with
OMPSIM_CHECK each access of a GPU image's code to its block's team-shared memory is checked
against each byte's history, and the first that races with another thread's (no barrier of the
block between them, and for two lanes of one warp no warp sync either; not both atomic), or that
reads a byte no thread of the block wrote, ends the launch with one line naming the global and
its element, both threads, both source lines and the synchronization to add. Clean programs,
with barriers, atomics and warp syncs, run as without the checker."""
import re

import pytest

from gpu_check_lines import ARCHS, CHECK, at, checked_line, kernel, line_of
from reliability_helpers import run

pytestmark = pytest.mark.e2e

PROGRAM = "shared_races.c"


def var(arch, function, name, program, decl, elements, nth=0):
    """A team-shared array of `elements` ints as the report names it: nvptx64 images carry no
    debug information for a target region's static (clang's name is 'function.name'); amdgcn's
    name it and its line."""
    text = (r"'%s\.%s'" % (function, name) if arch == "sm_90" else
            r"'%s at \S*%s:%d'" % (name, re.escape(program), line_of(program, decl, nth)))
    return text + r" \(%d elements of 4 bytes\)" % elements


LANES = (r"they are lanes of one warp, which a GPU runs independently, with no warp sync between them; "
         r"put a warp sync \(__kmpc_syncwarp\) or a barrier between the write and the read")


@pytest.mark.parametrize("arch", ARCHS)
def test_clean_kernels_with_barriers_atomics_and_warp_syncs_run_as_without_the_checker(gpu_built, arch):
    exe = gpu_built(PROGRAM, arch)
    for mode, out in (("clean", "clean 4\n"), ("warp-synced", "warp-synced 528\n")):
        for env in ({}, CHECK):
            r = run(exe, "sim", [mode], env=env)
            assert (r.rc, r.out, r.err) == (0, out, ""), (mode, env)


BARRIER = (r"no barrier of the block is between them; put a barrier \(#pragma omp barrier\) between the "
           r"write and the read")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("mode, thread", [("lanes", 1), ("warps", 32)])
def test_a_read_of_another_thread_s_write_with_no_sync_between_names_both_threads_and_lines(gpu_built, arch,
                                                                                           mode, thread):
    # Thread 1 reads thread 0's slot: lanes of one warp. Thread 32 reads it too: nvptx64's
    # threads 0 and 32 are in two warps, which only a barrier orders; amdgcn's wavefront has 64
    # lanes, and a warp sync orders two of them too.
    line = checked_line(gpu_built(PROGRAM, arch), mode)
    missing = BARRIER if thread == 32 and arch == "sm_90" else LANES
    slot = var(arch, "neighbour", "slot", PROGRAM, "static int slot[64];", 64, nth=1)
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread %d: the read of team-shared element 0 of %s at %s "
        r"races with thread 0's write at %s: %s"
        % (kernel("neighbour"), thread, slot, at(PROGRAM, "out[t] = slot[t - distance];", 18),
           at(PROGRAM, "slot[t] = t;", 15, nth=1), missing), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_two_threads_writing_one_element_are_named_with_the_fix(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "twice")
    slot = var(arch, "twice", "slot", PROGRAM, "static int slot[32];", 32)
    site = at(PROGRAM, "slot[t / 2] = t;", 19)
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 1: the write of team-shared element 0 of %s at %s "
        r"races with thread 0's write at %s: they are lanes of one warp, which a GPU runs independently, "
        r"with no warp sync between them; make both atomic, or put a warp sync \(__kmpc_syncwarp\) or a "
        r"barrier between them" % (kernel("twice"), slot, site, site), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_warp_sum_whose_steps_do_not_sync_the_warp_is_named(gpu_built, arch):
    # An ompx_bare kernel: lane 1 reads what lane 0 wrote before the first step, unsynced (lane 0's
    # own steps add 0, which changes nothing).
    line = checked_line(gpu_built(PROGRAM, arch), "warp")
    part = var(arch, "warp_sum", "part", PROGRAM, "static int part[32];", 32)
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 1: the read of team-shared element 0 of %s at %s "
        r"races with thread 0's write at %s: %s"
        % (kernel("warp_sum"), part, at(PROGRAM, "int below = t >= d ? part[t - d] : 0;", 28),
           at(PROGRAM, "part[t] = t + 1;", 13), LANES), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_read_of_an_element_no_thread_wrote_is_named(gpu_built, arch):
    # shared.c: thread 17 skips its element, which thread 0 then adds up.
    line = run(gpu_built("shared.c", arch), "sim", env=CHECK).single_error()
    slot = var(arch, "main", "slot", "shared.c", "static int slot[64];", 64)
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 0: the read of team-shared element 17 of %s at %s "
        r"finds memory no thread of the block wrote: a GPU's team-shared memory holds what its last block "
        r"left there; write it first, with a barrier \(or, between lanes of one warp, a warp sync\) between "
        r"the write and the read" % (kernel("main"), slot, at("shared.c", "s += slot[i];", 16)), line), line


def test_accesses_in_critical_regions_do_not_race(gpu_built):
    # The runtime's lock is the critical region's: two accesses made under it are ordered.
    for env in ({}, CHECK):
        r = run(gpu_built(PROGRAM, "sm_90"), "sim", ["critical"], env=env)
        assert (r.rc, r.out, r.err) == (0, "critical 4\n", ""), env
