"""Team-shared memory on the virtual GPU starts as a GPU's does, with nothing to count on
(docs/gpu-checks.md): every block finds each byte 0x7f, not zeros, so a program that reads an
element no thread wrote gets a wrong result there as on a GPU, the same in every block and
every run (under the checker a read of such an element is named instead: test_shared_races.py).
Under the checker (OMPSIM_CHECK) each team-shared global ends at a guard page, so a thread that
indexes past one is named with the global, the element and the thread."""
import re

import pytest

from gpu_check_lines import line_of
from reliability_helpers import run

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("arch", ["sm_90", "gfx90a"])
def test_an_unwritten_team_shared_element_holds_the_pattern_in_every_block(gpu_built, arch):
    r = run(gpu_built("shared.c", arch), "sim")
    # 63 ones and one int of 0x7f7f7f7f: each of the four blocks, not only the first.
    assert (r.rc, r.out) == (0, "%d %d %d %d\n" % ((63 + 0x7F7F7F7F,) * 4)), r.err


@pytest.mark.parametrize("arch", ["sm_90", "gfx90a"])
def test_a_clean_program_runs_as_without_the_checker(gpu_built, arch):
    # Its teams' sums are right (each team has its own copy, as on a GPU; stock's host plugin
    # gives its teams one copy, which they race on, so it is no oracle here).
    for env in ({}, {"OMPSIM_CHECK": "1"}):
        r = run(gpu_built("shared_bounds.c", arch), "sim", ["clean"], env=env)
        assert (r.rc, r.out, r.err) == (0, "1 1 1 1\n", ""), env


# nvptx64 images carry no debug information for a target region's static (clang's name
# for it is 'main.slot'); amdgcn's name it and its line.
SLOT = {"sm_90": r"'main\.slot'",
        "gfx90a": r"'slot at \S*shared_bounds\.c:%d'" % line_of("shared_bounds.c", "static int slot[64];")}


@pytest.mark.parametrize("arch", ["sm_90", "gfx90a"])
def test_under_the_checker_a_write_past_a_team_shared_array_names_it_the_element_and_the_thread(gpu_built,
                                                                                                arch):
    line = run(gpu_built("shared_bounds.c", arch), "sim", ["over"], env={"OMPSIM_CHECK": "1"}).single_error()
    assert re.fullmatch(
        r"ompsim: device 0: kernel __omp_offloading_\w+_main_l\d+ wrote team-shared memory at 0x[0-9a-f]+ "
        r"\(element 64, 0 bytes past the end of %s \(64 elements of 4 bytes\); block 0, thread 64\) from "
        r"dev:\w+\+0x[0-9a-f]+ \(0x[0-9a-f]+\); note: a thread indexes past the end of a team-shared variable, "
        r"which on a GPU writes the next one: size it for the block's threads, or keep the index below its length"
        % SLOT[arch], line), line
