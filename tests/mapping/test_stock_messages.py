"""Stock libomptarget 22's own diagnostics: ompsim's backends print the lines
stock prints for the same failure (same words, order and exit by abort), and
ompsim's explanation follows them."""
import os
import re
import signal

import pytest

from mapping_helpers import BACKENDS, PROGRAMS, compile_program, ompsim_lines, run

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("stock_messages")
    return {
        "stock": compile_program(os.path.join(PROGRAMS, "stock_messages.c"), d,
                                 extra=["-fopenmp-extensions"]),
        "requires": compile_program(os.path.join(PROGRAMS, "requires_mismatch.c"), d),
    }


def stock_lines(r):
    """The runtime's stock-format lines of stderr, with the host address the
    program printed (in stock's zero-padded form) replaced by ADDR."""
    m = re.search(r"addr=0x([0-9a-f]+)", r.stdout)
    lines = [l for l in r.stderr.splitlines() if "omptarget" in l]
    if m:
        padded = "0x%016x" % int(m.group(1), 16)
        lines = [l.replace(padded, "ADDR") for l in lines]
    # The extension's mapped block starts 4 bytes before the item.
    return [re.sub(r"0x[0-9a-f]{16}", "OTHER", l) for l in lines]


def runs(exe, args):
    return {b: run(exe, b, args=args) for b in BACKENDS}


@pytest.mark.parametrize("mode,expected", [
    ("target", [
        "omptarget message: device mapping required by 'present' map type modifier does not exist "
        "for host address ADDR (4 bytes)",
        "omptarget error: Call to getTargetPointer returned null pointer ('present' map type modifier).",
        "omptarget error: Call to targetDataBegin failed, abort target.",
        "omptarget error: Failed to process data before launching the kernel.",
        "omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.",
    ]),
    ("data", [
        "omptarget message: device mapping required by 'present' map type modifier does not exist "
        "for host address ADDR (4 bytes)",
        "omptarget error: Call to getTargetPointer returned null pointer ('present' map type modifier).",
        "omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.",
    ]),
    ("exit", [
        "omptarget message: device mapping required by 'present' map type modifier does not exist "
        "for host address ADDR (4 bytes)",
        "omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.",
    ]),
    ("update", [
        "omptarget message: device mapping required by 'present' motion modifier does not exist "
        "for host address ADDR (4 bytes)",
        "omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.",
    ]),
    ("extension", [
        "omptarget message: explicit extension not allowed: host address specified is ADDR (8 bytes), "
        "but device allocation maps to host at OTHER (8 bytes)",
        "omptarget error: Call to getTargetPointer returned null pointer (device failure or illegal "
        "mapping).",
        "omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.",
    ]),
])
def test_map_failure_prints_stock_lines_then_aborts(programs, mode, expected):
    out = runs(programs["stock"], [mode])
    fatal = re.compile(r"^stock_messages\.c:\d+:\d+: omptarget fatal error 1: failure of target "
                       r"construct while offloading is mandatory$")
    for backend, r in out.items():
        got = stock_lines(r)
        assert r.returncode == -signal.SIGABRT, "%s: exit %d\n%s" % (backend, r.returncode, r.stderr)
        assert "not reached" not in r.stdout
        assert got[:-1] == expected, "%s:\n%s" % (backend, r.stderr)
        assert fatal.match(got[-1]), "%s:\n%s" % (backend, r.stderr)
        assert got == stock_lines(out["host-upstream"]), backend
        if backend != "host-upstream":
            # ompsim's explanation comes last, after stock's fatal line.
            assert len(ompsim_lines(r.stderr)) == 1, r.stderr
            assert r.stderr.rstrip().splitlines()[-1].startswith("ompsim: "), r.stderr


def test_disassociate_reports_as_stock(programs):
    out = runs(programs["stock"], ["disassociate"])
    for backend, r in out.items():
        assert r.returncode == 0, "%s: %s" % (backend, r.stderr)
        assert "held: 1\nnot found: 1\nnot associated: 1\n" in r.stdout, backend
        assert stock_lines(r) == [
            "omptarget error: Trying to disassociate a pointer with a non-zero hold reference count",
            "omptarget error: Association not found",
            "omptarget error: Trying to disassociate a pointer which was not mapped via "
            "omp_target_associate_ptr",
        ], "%s:\n%s" % (backend, r.stderr)


def test_target_is_present_checks_the_storage_not_the_base(programs):
    out = runs(programs["stock"], ["present"])
    for backend, r in out.items():
        assert r.returncode == 0, "%s: %s" % (backend, r.stderr)
        assert "S.X 0 S.Y 1 Arr[0] 0 Arr[2] 1" in r.stdout, "%s: %s" % (backend, r.stdout)


@pytest.mark.parametrize("flags,clause", [
    ("1", None), ("2", "reverse_offload"), ("0xc", "unified_address"),
    ("8", "unified_shared_memory"), ("0x10", "dynamic_allocators")])
def test_requires_mismatch_is_stock_fatal_error_2(programs, flags, clause):
    for backend, r in runs(programs["requires"], [flags]).items():
        if clause is None:
            assert r.returncode == 0 and "registered" in r.stdout, "%s: %s" % (backend, r.stderr)
            continue
        assert r.returncode == -signal.SIGABRT, "%s: exit %d %s" % (backend, r.returncode, r.stderr)
        assert "registered" not in r.stdout
        assert r.stderr.splitlines()[0] == (
            "omptarget fatal error 2: '#pragma omp requires %s' not used consistently!" % clause), (
                "%s:\n%s" % (backend, r.stderr))


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory):
    src = os.path.join(PROGRAMS, "device_lifecycle.cpp")
    d = tmp_path_factory.mktemp("lifecycle")
    plain = compile_program(src, d)
    traps = os.path.join(str(d), "traps")
    os.mkdir(traps)
    return {"plain": plain, "traps": compile_program(src, traps, extra=["-DCTOR_TRAPS"])}


def test_device_constructors_run_when_the_device_is_first_used(lifecycle):
    for backend in BACKENDS:
        r = run(lifecycle["traps"], backend, args=["lazy"])
        assert (r.returncode, r.stdout) == (0, "host only\n"), "%s: %s" % (backend, r.stderr)
        r = run(lifecycle["traps"], backend, args=["ctor"])
        assert r.returncode < 0 and "not reached" not in r.stdout, "%s: %d %s" % (backend, r.returncode, r.stderr)
        if backend == "sim":  # its own process: stock's fatal line, then ompsim's
            lines = r.stderr.splitlines()
            assert lines[0] == ("omptarget fatal error 0: \"the plugin backend is in an invalid or unsupported "
                                "state\" failed to load images on device '0'"), r.stderr
            assert len(ompsim_lines(r.stderr)) == 1 and "SIGILL" in lines[1], r.stderr


def test_trapping_kernel_fails_its_target_region_and_aborts(lifecycle):
    # The host plugins run the kernel in the process: the trap kills it. sim
    # reports the failed region as stock does for a GPU, and aborts.
    for backend in ("host-upstream", "ours-host"):
        r = run(lifecycle["plain"], backend, args=["trap"])
        assert r.returncode == -signal.SIGILL, "%s: %d %s" % (backend, r.returncode, r.stderr)
    r = run(lifecycle["plain"], "sim", args=["trap"])
    assert r.returncode == -signal.SIGABRT, r.stderr
    assert "not reached" not in r.stdout
    lines = r.stderr.splitlines()
    assert lines[:2] == [
        "omptarget error: Executing target region abort target.",
        "omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options."], r.stderr
    assert re.match(r"device_lifecycle\.cpp:\d+:\d+: omptarget fatal error 1: failure of target construct "
                    r"while offloading is mandatory$", lines[2]), r.stderr
    assert lines[3].startswith("ompsim: device 0: kernel ") and \
        "execution interrupted by a trap instruction (SIGILL)" in lines[3], r.stderr


def test_freed_device_block_comes_back_as_with_stock(lifecycle):
    for backend in ("host-upstream", "ours-host"):
        r = run(lifecycle["plain"], backend, args=["reuse"])
        assert (r.returncode, r.stdout) == (0, "same block: 1\n"), "%s: %s" % (backend, r.stderr)


def test_unified_shared_memory_counts_unmapped_data_present(tmp_path):
    exe = compile_program(os.path.join(PROGRAMS, "usm_present.c"), tmp_path)
    for backend in ("host-upstream", "ours-host"):  # sim refuses the requirement by design
        r = run(exe, backend)
        assert (r.returncode, r.stdout) == (0, "I=2 X=11 present=1\n"), "%s: %s" % (backend, r.stderr)
        assert "omptarget" not in r.stderr and ompsim_lines(r.stderr) == [], r.stderr
