"""Warp collectives on the virtual GPU (docs/gpu-checks.md): a shuffle or ballot of an
ompx_bare kernel on a warp of 32 lanes (nvptx64) follows CUDA's rules for __shfl_sync and
__ballot_sync, and a break ends the launch with one line naming the block, the warp, the lanes
and the call: a mask that does not name the caller, a lane the mask names that waits at the
block's barrier instead (a GPU hangs), a shuffle that reads a lane which did not take part (a
GPU gives an undefined value). Lanes that finished may be named. AMD's warps of 64 read any
lane whatever the mask, as AMD's hardware does."""
import re

import pytest

from reliability_helpers import run

pytestmark = pytest.mark.e2e

PROGRAM = "warps.c"
CALL = r"called from dev:%s\+0x[0-9a-f]+ \(0x[0-9a-f]+\)"
READ_TAIL = r": a GPU gives an undefined value; a shuffle reads only lanes that take part"


def kernel(fn):
    return r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_%s_l\d+" % fn


def line(gpu_built, mode):
    return run(gpu_built(PROGRAM, "sm_90"), "sim", [mode]).single_error()


def test_a_shuffle_that_reads_a_lane_which_finished(gpu_built):
    got = line(gpu_built, "finished")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s): block 0, warp 0: lane 15 \(thread 15\) reads lane 16 in a shuffle %s "
        r"with mask 0xffffffff, but lane 16 has finished%s" % (kernel("finished"), CALL % r"\1", READ_TAIL),
        got), got


def test_a_shuffle_that_reads_past_the_blocks_threads(gpu_built):
    # 48 threads: the second warp has lanes 0-15 only.
    got = line(gpu_built, "past")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s): block 0, warp 1: lane 15 \(thread 47\) reads lane 16 in a shuffle %s "
        r"with mask 0xffffffff, but lane 16 is not there \(the block has fewer threads\)%s"
        % (kernel("past"), CALL % r"\1", READ_TAIL), got), got


def test_a_mask_that_does_not_name_the_caller(gpu_built):
    got = line(gpu_built, "unnamed")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s): block 0, warp 0: lane 16 \(thread 16\) calls a warp collective, %s, "
        r"with mask 0xffff, which does not name the calling lane: a GPU's result is undefined; a lane's mask "
        r"names the lane" % (kernel("unnamed"), CALL % r"\1"), got), got


def test_a_lane_the_mask_names_waits_at_the_blocks_barrier_instead(gpu_built):
    got = line(gpu_built, "barrier")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s): block 0, warp 0: lanes 0, 1, 2, 3 and 12 more wait at a warp collective "
        r"%s whose mask 0xffffffff names lane 16 \(thread 16\), which waits at a barrier of the block instead: "
        r"on a GPU each waits for the other forever; every lane a mask names that has not finished makes the "
        r"same call" % (kernel("barrier"), CALL % r"\1"), got), got


@pytest.mark.parametrize("arch", ["sm_90", "gfx90a"])
def test_warp_sums_whose_masks_name_the_whole_warp_are_right(gpu_built, arch):
    r = run(gpu_built(PROGRAM, arch), "sim", ["clean"])
    # Four teams, each the sum of 1..64.
    assert (r.rc, r.out) == (0, "clean 8320\n"), r.err
    assert "ompsim:" not in r.err, r.err


@pytest.mark.parametrize("mode, out", [("finished", "finished 1\n"), ("past", "past 1\n"),
                                       ("unnamed", "unnamed 43690\n")])
def test_amd_warps_read_any_lane_whatever_the_mask(gpu_built, mode, out):
    # gfx90a: one wavefront of 64 lanes; DeviceRTL's amdgcn collectives ignore the mask.
    r = run(gpu_built(PROGRAM, "gfx90a"), "sim", [mode])
    assert (r.rc, r.out) == (0, out), r.err
