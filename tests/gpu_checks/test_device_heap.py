"""The device heap under the checker (docs/gpu-checks.md): with OMPSIM_CHECK a GPU image's
malloc blocks end at an inaccessible page and freed blocks stay inaccessible, and each access of
the image's code is checked before it lands, so an overrun, an underrun, a use after free, a
write into malloc's alignment slack, a read of bytes no thread wrote, and a double or foreign
free each end the launch with one line naming the block, who allocated (and freed) it, and the
access's source line. Without the checker, and for clean programs under it (malloc, and calloc
with realloc), the program runs as on stock's host plugin."""
import re

import pytest

from gpu_check_lines import at as site_of
from reliability_helpers import run

pytestmark = pytest.mark.e2e

ARCHS = ["sm_90", "gfx90a"]
PROGRAM = "heap.c"
CHECK = {"OMPSIM_CHECK": "1"}
KERNEL = r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_main_l\d+"
# The device heap's calls, as the reports name them (the JIT passes each call's source line).
MALLOC = ("block = (int *)malloc(16 * sizeof(int));", 22)
FREE = ("    free(block);", 5)


def block(size, block_id, thread, freed_by=None, allocated_at=MALLOC):
    """The text naming a device-heap block of `size` bytes that device malloc returned to
    `thread` of `block_id` at `allocated_at` (and that `freed_by`, a (block, thread), freed at
    the program's free)."""
    text = (r"the %d-byte device-heap block at 0x[0-9a-f]+ that device malloc returned to block %d, "
            r"thread %d called at %s" % (size, block_id, thread, at(*allocated_at)))
    if freed_by:
        text += r" \(freed by block %d, thread %d called at %s\)" % (*freed_by, at(*FREE))
    return text


def checked_line(exe, mode):
    return run(exe, "sim", [mode], env=CHECK).single_error()


def at(text, column):
    """A site of PROGRAM as the report names it."""
    return site_of(PROGRAM, text, column)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("mode", ["clean", "calloc"])
def test_a_clean_program_runs_as_on_stock_with_and_without_the_checker(gpu_built, stock, arch, mode):
    # "calloc": calloc's zeros count as written, and realloc keeps them written.
    for env in ({}, CHECK):
        r = run(gpu_built(PROGRAM, arch), "sim", [mode], env=env)
        assert (r.rc, r.out, r.err) == (0, stock(mode), ""), env


@pytest.mark.parametrize("arch", ARCHS)
def test_a_write_past_the_end_of_a_malloc_block_names_the_block_its_allocation_and_the_line(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "overrun")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 5: the write of 4 bytes at %s ends 4 bytes past the end "
        r"of %s: keep the index below the block's size, or allocate more"
        % (KERNEL, at("seen[i][16] = 1;", 19), block(64, 0, 5)), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_an_overrun_of_a_block_nothing_else_sees_is_named_too(gpu_built, arch):
    # clang-22 at -O2 removes a malloc whose block does not escape, with the overrun (sm_90's
    # code then stores the sum and nothing else); `ompsim cc` keeps the device heap's calls.
    line = checked_line(gpu_built(PROGRAM, arch), "local")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 6: the write of 4 bytes at %s ends 4 bytes past the end "
        r"of %s: keep the index below the block's size, or allocate more"
        % (KERNEL, at("local[k] = k;", 18),
           block(16, 0, 6, allocated_at=("int *local = (int *)malloc(4 * sizeof(int));", 27))), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_write_before_the_start_of_a_malloc_block_is_named(gpu_built, arch):
    # The block's first page holds the bytes before it: no page guards them, the check does.
    line = checked_line(gpu_built(PROGRAM, arch), "before")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 4: the write of 4 bytes at %s starts 4 bytes before the "
        r"start of %s: keep the index at 0 or above" % (KERNEL, at("seen[i][-1] = 1;", 19), block(64, 0, 4)),
        line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_read_of_a_freed_block_names_its_allocation_and_its_free(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "use-after-free")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 9: the read of 4 bytes at %s is 12 bytes from the start "
        r"of %s: device code uses a device-heap block after its free; free it after its last use"
        % (KERNEL, at("sum += block[3];", 14), block(64, 0, 9, freed_by=(0, 9))), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_read_of_an_element_no_thread_wrote_is_named(gpu_built, arch):
    # Thread 3 writes 15 of its block's 16 ints and sums all 16: a GPU's malloc block holds
    # whatever was there before. clang may load the element alone or with its neighbours.
    line = checked_line(gpu_built(PROGRAM, arch), "unwritten")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 3: the read of \d+ bytes at %s reads byte 60 of %s, which "
        r"no thread wrote: device malloc returns memory holding whatever was there before, on a GPU as here; "
        r"write it first, or allocate it with calloc" % (KERNEL, at("sum += seen[i][k];", 14), block(64, 0, 3)),
        line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_double_free_names_both_frees(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "double-free")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 1, thread 8: free\(0x[0-9a-f]+\) called at %s of a block freed "
        r"before: %s" % (KERNEL, at("      free(block);", 7), block(64, 1, 8, freed_by=(1, 8))), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_free_of_a_mapped_array_says_device_malloc_did_not_return_it(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "foreign-free")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 2: free\(0x[0-9a-f]+\) called at %s of a pointer "
        r"device malloc did not return \(device memory the host mapped or allocated, a stack or a global is "
        r"not the device heap's\)" % (KERNEL, at("free(out);", 7)), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_write_into_the_alignment_slack_is_named_at_the_write(gpu_built, arch):
    # malloc(13) gives 16 bytes, and the guard page is 3 bytes on: the check names the write
    # itself (a write the check cannot see is still found at the block's free).
    line = checked_line(gpu_built(PROGRAM, arch), "tail")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 0, thread 7: the write of 1 byte at %s ends 1 byte past the end of "
        r"%s: keep the index below the block's size, or allocate more"
        % (KERNEL, at("((char *)seen[i])[13] = 1;", 29),
           block(13, 0, 7, allocated_at=("char *bytes = (char *)malloc(13);", 29))), line), line
