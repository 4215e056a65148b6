"""Misused device memory API: NULL or a named error return, never a crash, on both of ompsim's backends.

ours-host shares the host process (device memory is host memory), so it
checks each device pointer against its live allocations before free() or a
copy; sim checks against its arena. Stock libomptarget crashes on several of
these (free(): invalid pointer, SIGSEGV).
"""
import re

import pytest

from reliability_helpers import ompsim_lines, run

PROGRAM = "target_memory.c"
BACKENDS = ["sim", "ours-host"]
ADDR = r"0x[0-9a-f]+"

# case -> regex of every ompsim: line the case prints (one per misuse).
CASES = {
    "free-host": [r".*\b%s is not a live device allocation.*" % ADDR],
    "free-interior": [r".*\b%s (is not a live device allocation|is inside the device allocation at %s \(64 bytes\), "
                      r"not its start).*" % (ADDR, ADDR)],
    "free-twice": [r".*\b%s is not a live device allocation.*" % ADDR],
    "memcpy-from-0x10": [r".*(read|copy from device address) .*\b0x10\b.*(outside device memory|not device "
                         r"memory).*"],
    "memcpy-8g": [r".*8589934592 bytes.*(outside device memory|runs past the end of the device allocation).*"],
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_huge_allocations_return_null(built, backend):
    r = run(built(PROGRAM), backend, ["alloc-huge"])
    assert r.rc == 0, r.err
    assert r.out.count("=null") == 3 and "non-null" not in r.out, r.out
    lines = ompsim_lines(r.err)
    assert len(lines) == 3 and all("cannot allocate" in l and "bytes" in l for l in lines), r.err


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_misuse_is_named_and_the_program_goes_on(built, backend, case):
    r = run(built(PROGRAM), backend, [case])
    assert r.rc == 0, "rc=%d (negative: killed by a signal)\n%s" % (r.rc, r.err)
    assert "done" in r.out, r.out + r.err
    lines = ompsim_lines(r.err)
    assert len(lines) == len(CASES[case]), r.err
    for line, expected in zip(lines, CASES[case]):
        assert re.fullmatch("ompsim: " + expected, line), line
    if case.startswith("memcpy"):
        assert "memcpy rc=-1" in r.out, r.out
    assert r.leftover == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_correct_use_still_copies(built, backend):
    r = run(built(PROGRAM), backend, ["ok"])
    assert r.rc == 0 and "memcpy rc=0 out=1,2,3,4" in r.out, r.out + r.err
    assert ompsim_lines(r.err) == [], r.err
