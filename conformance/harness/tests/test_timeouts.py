"""How long a cell's program may run: DEFAULT_TIMEOUT (or the program's own), three times that
on the virtual GPU's columns under --map-check, whose GPU checks run a grid's blocks one at a
time and check each access."""
import types

import pytest

from harness.runner import CHECKED_GPU_TIMEOUT_FACTOR, DEFAULT_TIMEOUT, Cell, _run_timeout


def spec(timeout=0):
    return types.SimpleNamespace(timeout=timeout)


@pytest.mark.parametrize("backend", ["sim", "sim-nvptx", "sim-amdgcn", "ours-host", "host-upstream"])
def test_a_plain_run_has_the_default_or_the_program_s_own_timeout(backend):
    cell = Cell("p.c", backend, "pass")
    assert _run_timeout(cell, spec()) == DEFAULT_TIMEOUT
    assert _run_timeout(cell, spec(7)) == 7


@pytest.mark.parametrize("backend", ["sim-nvptx", "sim-amdgcn"])
def test_the_gpu_columns_under_the_checker_may_run_longer(backend):
    cell = Cell("p.c", backend, "pass", map_check=True)
    assert _run_timeout(cell, spec()) == DEFAULT_TIMEOUT * CHECKED_GPU_TIMEOUT_FACTOR
    assert _run_timeout(cell, spec(7)) == 7 * CHECKED_GPU_TIMEOUT_FACTOR


@pytest.mark.parametrize("backend", ["sim", "ours-host", "host-upstream"])
def test_other_columns_under_map_check_keep_their_timeout(backend):
    assert _run_timeout(Cell("p.c", backend, "pass", map_check=True), spec()) == DEFAULT_TIMEOUT
