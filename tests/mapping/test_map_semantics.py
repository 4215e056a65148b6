"""Map semantics as stock libomptarget 22 applies them (ATTACH items, reference
counts, strided updates, unimplemented bits), on every backend."""
import pytest

from mapping_helpers import BACKENDS, check_ok, ompsim_lines, run

pytestmark = pytest.mark.e2e

#: Programs whose whole output must be the same on stock libomptarget and on
#: ompsim's backends (each also checks itself through its exit status).
SAME_AS_STOCK = [
    "attach_enter_exit.c",
    "attach_deref.c",
    "attach_struct_member.c",
    "refcount.c",
    "update_strided.c",
    "memcpy_rect.c",
    "update_mapper.c",
    "lambda_capture.cpp",
    "mapper_first_component.c",
    "always_global.c",
]


@pytest.mark.parametrize("program", SAME_AS_STOCK)
def test_output_matches_stock_on_every_backend(built, program):
    exe = built(program)
    outputs = {}
    for backend in BACKENDS:
        r = run(exe, backend)
        check_ok(r, backend)
        outputs[backend] = r.stdout
    for backend in BACKENDS[1:]:
        assert outputs[backend] == outputs["host-upstream"], (
            "%s differs from host-upstream on %s:\n--- host-upstream\n%s--- %s\n%s" % (
                program, backend, outputs["host-upstream"], backend, outputs[backend]))


def test_enter_to_exit_from_copies_back(built):
    exe = built("attach_enter_exit.c")
    for backend in BACKENDS:
        r = run(exe, backend)
        check_ok(r, backend)
        assert "whole: 100 107 present=0" in r.stdout
        assert "offset: 3 8 22 12 present=0" in r.stdout


def test_struct_member_pointer_is_attached_on_the_device(built):
    # On sim the kernel would fault at the host address of s.data if the
    # device copy of s were not attached.
    exe = built("attach_struct_member.c")
    for backend in BACKENDS:
        r = run(exe, backend)
        check_ok(r, backend)
        assert "member: 0 3 6 9" in r.stdout
        assert "array of structs: 1 12 23 pointers kept=1 present=0" in r.stdout


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_strided_updates_with_lower_bounds(built, backend):
    # Stock libomptarget 22 moves the wrong elements for these sections (see
    # the program's comment), so only ompsim's backends are held to them.
    r = run(built("update_strided_offsets.c"), backend)
    check_ok(r, backend)
    assert "strided updates ok" in r.stdout


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_strided_update_through_a_declare_mapper(built, backend):
    r = run(built("update_mapper_strided.c"), backend)
    check_ok(r, backend)
    assert "mapper strided update ok" in r.stdout


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_strided_update_merges_runs_into_few_transfers(built, tmp_path, backend):
    trace = tmp_path / "trace.jsonl"
    r = run(built("update_strided_offsets.c"), backend,
            env={"OMPSIM_TRACE": "transfer", "OMPSIM_TRACE_FILE": str(trace)})
    check_ok(r, backend)
    sizes = [line for line in trace.read_text().splitlines() if '"from_device"' in line]
    # from(a[1:3][2:4]) is three 16-byte rows, not twelve 4-byte elements.
    assert sum('"size":16' in line for line in sizes) >= 3, "\n".join(sizes)


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_unimplemented_map_bit_is_one_error(built, backend):
    r = run(built("unknown_map_bit.c"), backend)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "without an error" not in r.stdout
    lines = ompsim_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    assert "0x800" in lines[0] and "'x'" in lines[0] and "unknown_map_bit" in lines[0], lines[0]


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_memcpy_rect_moves_whole_rows_in_one_transfer(built, tmp_path, backend):
    trace = tmp_path / "trace.jsonl"
    r = run(built("memcpy_rect.c"), backend,
            env={"OMPSIM_TRACE": "transfer", "OMPSIM_TRACE_FILE": str(trace)})
    check_ok(r, backend)
    to_device = [line for line in trace.read_text().splitlines() if '"to_device"' in line]
    # The whole 4x6 doubles (192 bytes) go in one transfer, the 2x3x4 ints (96) in one.
    assert any('"size":192' in line for line in to_device), "\n".join(to_device)
    assert any('"size":96' in line for line in to_device), "\n".join(to_device)
