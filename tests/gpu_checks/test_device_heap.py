"""The device heap under the checker (docs/gpu-checks.md): with OMPSIM_CHECK a GPU image's
malloc blocks end at an inaccessible page and freed blocks stay inaccessible, so an overrun, a
use after free, a double or foreign free and a write into malloc's alignment slack each end the
launch with one line naming the block, who allocated (and freed) it and where. Without the
checker, and for a clean program under it, the program runs as on stock's host plugin."""
import re

import pytest

from reliability_helpers import run

pytestmark = pytest.mark.e2e

ARCHS = ["sm_90", "gfx90a"]
PROGRAM = "heap.c"
CHECK = {"OMPSIM_CHECK": "1"}
KERNEL = r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_main_l\d+"
# A call in the kernel's code, as the controller names it.
CODE = r"dev:__omp_offloading_\w+\+0x[0-9a-f]+ \(0x[0-9a-f]+\)"


def block(size, block_id, thread, freed_by=None):
    """The text naming a device-heap block of `size` bytes that device malloc returned to
    `thread` of `block_id` (and that `freed_by`, a (block, thread), freed)."""
    text = (r"the %d-byte device-heap block at 0x[0-9a-f]+ that device malloc returned to block %d, "
            r"thread %d called from %s" % (size, block_id, thread, CODE))
    if freed_by:
        text += r" \(freed by block %d, thread %d called from %s\)" % (*freed_by, CODE)
    return text


def checked_line(exe, mode):
    return run(exe, "sim", [mode], env=CHECK).single_error()


@pytest.fixture(scope="module")
def expected_total(gpu_built):
    """What the clean program prints on stock's host plugin."""
    r = run(gpu_built(PROGRAM, "x86_64"), "host-upstream", ["clean"])
    assert r.rc == 0, r.err
    return r.out


@pytest.mark.parametrize("arch", ARCHS)
def test_a_clean_program_runs_as_on_stock_with_and_without_the_checker(gpu_built, expected_total, arch):
    for env in ({}, CHECK):
        r = run(gpu_built(PROGRAM, arch), "sim", ["clean"], env=env)
        assert (r.rc, r.out, r.err) == (0, expected_total, ""), env


@pytest.mark.parametrize("arch", ARCHS)
def test_a_write_past_the_end_of_a_malloc_block_names_the_block_and_its_allocation(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "overrun")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s wrote device-heap memory at 0x[0-9a-f]+ \(0 bytes past the end of %s\) "
        r"from %s; note: the kernel indexes past the end of a device malloc block: allocate more, or keep "
        r"the index below its size" % (KERNEL, block(64, 0, 5), CODE), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_read_of_a_freed_block_names_its_allocation_and_its_free(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "use-after-free")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s read freed device-heap memory at 0x[0-9a-f]+ \(12 bytes from the start of "
        r"%s\) from %s; note: device code uses a device-heap block after its free: free it after its last use"
        % (KERNEL, block(64, 0, 9, freed_by=(0, 9)), CODE), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_double_free_names_both_frees(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "double-free")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 1, thread 8: free\(0x[0-9a-f]+\) called from %s of a block freed "
        r"before: %s" % (KERNEL, CODE, block(64, 1, 8, freed_by=(1, 8))), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_free_of_a_mapped_array_says_device_malloc_did_not_return_it(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "foreign-free")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 2: free\(0x[0-9a-f]+\) called from %s of a pointer "
        r"device malloc did not return \(device memory the host mapped or allocated, a stack or a global is "
        r"not the device heap's\)" % (KERNEL, CODE), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_write_into_the_alignment_slack_is_found_at_the_free(gpu_built, arch):
    # malloc(13) gives 16 bytes; the guard page is 3 bytes on, so the free checks them.
    line = checked_line(gpu_built(PROGRAM, arch), "tail")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 7: free\(0x[0-9a-f]+\) called from %s found a write past "
        r"the end of %s \(byte 13 of 13 changed\): keep the index below the block's size, or allocate more"
        % (KERNEL, CODE, block(13, 0, 7)), line), line

