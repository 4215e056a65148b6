"""Bad OMPSIM_* values are refused by name, never guessed; a trace that cannot be written fails the run.

Every variable is parsed strictly (the whole string, its range, overflow). A
refused value gives one `ompsim: ignoring VAR='VALUE': ...` line and the
default is kept, so the program still runs correctly.
"""
import re

import pytest

from reliability_helpers import ompsim_lines, run

PROGRAM = "device_faults.c"  # "ok": one target region, prints r=42
BACKENDS = ["sim", "ours-host"]

# (variable, value, problem named in the line)
BAD_VALUES = [
    ("OMPSIM_NUM_DEVICES", "2abc", "not a whole non-negative number"),
    ("OMPSIM_NUM_DEVICES", "4294967297", "out of range"),
    ("OMPSIM_NUM_DEVICES", "18446744073709551617", "too large"),
    ("OMPSIM_NUM_DEVICES", "-1", "not a whole non-negative number"),
    ("OMPSIM_DEVICE_MEMORY", "17179869185G", "too large"),
    ("OMPSIM_DEVICE_MEMORY", "99999999999G", "too large"),
    ("OMPSIM_DEVICE_MEMORY", "1T", "not a whole non-negative number"),
    ("OMPSIM_DEVICE_MEMORY", "2048G", "out of range"),
    ("OMPSIM_DEVICE_BASE", "0x200000000001", "not page-aligned"),
    ("OMPSIM_DEVICE_THREADS", "0", "out of range"),
    ("OMPSIM_DEVICE_THREADS", "4097", "out of range"),
    ("OMPSIM_KERNEL_TIMEOUT", "nan", "not a number"),
    ("OMPSIM_KERNEL_TIMEOUT", "inf", "not a number"),
    ("OMPSIM_KERNEL_TIMEOUT", "1e999", "not a number"),
    ("OMPSIM_KERNEL_TIMEOUT", "0", "out of range"),
    ("OMPSIM_KERNEL_TIMEOUT", "5s", "not a number"),
    ("OMPSIM_EXECUTOR_START_TIMEOUT", "-3", "out of range"),
    ("OMPSIM_TRACE_TRANSLATE_CAP", "-1", "not a whole non-negative number"),
    ("OMPSIM_TRACE_TRANSLATE_CAP", " 5", "not a whole non-negative number"),
    ("OMPSIM_TRACE_NORMALIZE", "yes", "not a flag"),
    ("OMPSIM_HIDDEN_HELPER_SLICE_US", "100001", "out of range"),
    ("OMPSIM_HIDDEN_HELPER_SLICE_US", "1ms", "not a whole non-negative number"),
    ("LIBOMPTARGET_INFO", "0x100000000", "out of range"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("var,value,problem", BAD_VALUES, ids=["%s=%s" % (v, x) for v, x, _ in BAD_VALUES])
def test_bad_value_is_named_and_the_default_kept(built, backend, var, value, problem):
    r = run(built(PROGRAM), backend, ["ok"], env={var: value})
    assert r.rc == 0 and "r=42" in r.out, r.err
    lines = ompsim_lines(r.err)
    assert len(lines) == 1, r.err
    assert re.fullmatch(r"ompsim: ignoring %s='%s': %s \(expected .+\)" % (var, re.escape(value), problem),
                        lines[0]), lines[0]
    assert r.leftover == []


GOOD_VALUES = [("OMPSIM_DEVICE_MEMORY", "512M"), ("OMPSIM_DEVICE_MEMORY", "0x40000000"),
               ("OMPSIM_KERNEL_TIMEOUT", "2.5"), ("OMPSIM_TRACE_TRANSLATE_CAP", "0"),
               ("OMPSIM_EXECUTOR_START_TIMEOUT", "120"), ("OMPSIM_DEVICE_THREADS", "64"),
               ("OMPSIM_HIDDEN_HELPER_SLICE_US", "0")]


@pytest.mark.parametrize("var,value", GOOD_VALUES, ids=["%s=%s" % v for v in GOOD_VALUES])
def test_good_value_is_taken_silently(built, var, value):
    r = run(built(PROGRAM), "sim", ["ok"], env={var: value})
    assert r.rc == 0 and "r=42" in r.out, r.err
    assert ompsim_lines(r.err) == [], r.err


@pytest.mark.parametrize("backend", BACKENDS)
def test_unwritable_trace_file_fails_the_run(built, backend):
    r = run(built(PROGRAM), backend, ["ok"], env={"OMPSIM_TRACE": "all", "OMPSIM_TRACE_FILE": "/dev/full"})
    assert "r=42" in r.out, r.err  # the program's own output is not lost
    line = r.single_error()
    assert re.fullmatch(r"ompsim: trace lost: OMPSIM_TRACE_FILE '/dev/full': cannot write to it: No space left "
                        r"on device \([1-9]\d* events? not written\)", line), line


@pytest.mark.parametrize("backend", BACKENDS)
def test_unopenable_trace_file_fails_the_run(built, backend, tmp_path):
    path = tmp_path / "missing-dir" / "trace.jsonl"
    r = run(built(PROGRAM), backend, ["ok"], env={"OMPSIM_TRACE": "all", "OMPSIM_TRACE_FILE": str(path)})
    assert "r=42" in r.out, r.err
    line = r.single_error()
    assert re.fullmatch(r"ompsim: trace lost: OMPSIM_TRACE_FILE '%s': cannot open it: No such file or directory "
                        r"\([1-9]\d* events? not written\)" % re.escape(str(path)), line), line


def test_writable_trace_file_exits_zero(built, tmp_path):
    path = tmp_path / "trace.jsonl"
    r = run(built(PROGRAM), "sim", ["ok"], env={"OMPSIM_TRACE": "all", "OMPSIM_TRACE_FILE": str(path)})
    assert r.rc == 0 and ompsim_lines(r.err) == [], r.err
    assert path.read_text().count("\n") > 0
