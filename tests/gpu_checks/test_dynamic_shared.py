"""A block's dynamic shared memory under the checker (docs/gpu-checks.md): the memory
llvm_omp_target_dynamic_shared_alloc() returns for a launch's ompx_dyn_cgroup_mem is team-shared
memory, checked as the team-shared globals are (races between a block's threads, reads of bytes
no thread of the block wrote), and for accesses past the bytes the launch asked for: within its
last 16 bytes by the access's check, farther by the inaccessible page that follows it."""
import re

import pytest

from gpu_check_lines import ARCHS, CHECK, at, checked_line, kernel
from reliability_helpers import run

pytestmark = pytest.mark.e2e

PROGRAM = "dynamic_shared.c"
MEMORY = r"the block's dynamic shared memory \(64 bytes\)"


def site(text, column):
    return at(PROGRAM, text, column)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_clean_kernel_runs_the_same_with_and_without_the_checker(gpu_built, arch):
    # Stock's host plugin has no dynamic shared memory (a null pointer): the sum is the
    # program's own, 16 * 100 + 105 + 105.
    for env in ({}, CHECK):
        r = run(gpu_built(PROGRAM, arch), "sim", ["clean"], env=env)
        assert (r.rc, r.out, r.err) == (0, "clean 1810\n", ""), env


@pytest.mark.parametrize("arch", ARCHS)
def test_a_read_of_a_neighbour_s_slot_with_no_barrier_names_both_threads_and_lines(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "race")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 1: the read of team-shared byte 0 of %s at %s "
        r"races with thread 0's write at %s: they are lanes of one warp, .*" % (
            kernel("main"), MEMORY, site("out[team * THREADS + t] = slot[t ? t - 1 : 0];", 31),
            site("slot[t] = team * 100 + t;", 15)), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_read_of_a_slot_no_thread_wrote_is_named(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "unwritten")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 6: the read of team-shared byte 20 of %s at %s finds "
        r"memory no thread of the block wrote: .*" % (
            kernel("main"), MEMORY,
            site("out[team * THREADS + t] = slot[t ? t - 1 : 0];", 31)), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_an_access_past_the_bytes_the_launch_asked_for_is_named_with_its_line(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "overrun")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 15: the write of 4 bytes at %s ends 4 bytes past the end "
        r"of the block's dynamic shared memory \(60 bytes\): keep the index below the size the launch asks for "
        r"\(ompx_dyn_cgroup_mem\), or ask for more" % (kernel("main"), site("slot[t] = team * 100 + t;", 15)),
        line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_write_far_past_the_end_faults_on_the_page_after_it(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "guard")
    assert "dynamic shared memory at 0x" in line and \
        "76 bytes past the end of the block's dynamic shared memory (64 bytes); block 0, thread 3)" in line and \
        "ask for more, or keep the index below its size" in line, line
