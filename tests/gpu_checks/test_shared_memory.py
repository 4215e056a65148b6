"""Team-shared memory on the virtual GPU starts as a GPU's does, with nothing to count on
(docs/gpu-checks.md): every block finds each byte 0x7f, not zeros, so a program that reads an
element no thread wrote gets a wrong result there as on a GPU, the same in every block and
every run."""
import pytest

from reliability_helpers import run

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("arch", ["sm_90", "gfx90a"])
def test_an_unwritten_team_shared_element_holds_the_pattern_in_every_block(gpu_built, arch):
    r = run(gpu_built("shared.c", arch), "sim")
    # 63 ones and one int of 0x7f7f7f7f: each of the four blocks, not only the first.
    assert (r.rc, r.out) == (0, "%d %d %d %d\n" % ((63 + 0x7F7F7F7F,) * 4)), r.err
