"""The map checker (`ompsim run --check`, OMPSIM_CHECK): each planted bug gets its one
exact line, a correct program none, and the checker changes no result."""
import json
import os
import re
import subprocess

import pytest

from check_helpers import OMPSIM, PROGRAMS, compile_program, reports, run

pytestmark = pytest.mark.e2e

ADDR = r"0x[0-9a-f]+"

#: program -> the one report --check prints for it (a regex only where addresses are).
EXPECTED = {
    "stale_copy.c":
        r"ompsim: check: stale device copy: 'A' \(256 bytes at host ADDR\) changed on the host \(first at "
        r"byte 20\) after it was last copied to the device, and the target region main_l12 at "
        r"stale_copy\.c:12:1 uses the present device copy without copying it; fix: 'target update to\(A\)' "
        r"before the region, or 'map\(always, to: A\)'",
    "dropped_writes.c":
        r"ompsim: check: dropped device writes: the device copy of 'B' \(128 bytes at host ADDR\) was "
        r"changed on device 0 \(first at byte 4\) after it was last copied, and the map-exiting construct "
        r"at dropped_writes\.c:13:1 ends its mapping \(mapped by the map-entering construct at "
        r"dropped_writes\.c:9:1\) without copying it back; fix: map it 'from' where the mapping ends "
        r"\('map\(from: B\)'\), or 'target update from\(B\)' before",
    "uninit_copy_back.c":
        r"ompsim: check: uninitialized copy-back: bytes \[200, 400\) of 'C' \(400 bytes at host ADDR\) were "
        r"never written on device 0 when the target region main_l9 at uninit_copy_back\.c:9:1 copied them "
        r"back; fix: map only the section the device writes, write every byte there, or map 'C' 'tofrom' "
        r"so the device starts from the host's values",
    "uninit_target_alloc.c":
        r"ompsim: check: uninitialized copy-back: bytes \[128, 256\) of the 256-byte block from omp_target_alloc "
        r"at ADDR were never written on device 0 when omp_target_memcpy copied them to host ADDR; fix: write "
        r"them on the device first, or copy only the part the device wrote",
    "uninit_in_data_region.c":
        r"ompsim: check: uninitialized copy-back: bytes \[4, 32\) of 'X' \(32 bytes at host ADDR\) were never "
        r"written on device 0 when the map-exiting construct at uninit_in_data_region\.c:9:1 copied them back; "
        r"fix: map only the section the device writes, write every byte there, or map 'X' 'tofrom' so the "
        r"device starts from the host's values",
    "leak.c":
        r"ompsim: check: leak: 'D' \(128 bytes at host ADDR\) is still mapped on device 0 at exit "
        r"\(reference count 1, mapped by the map-entering construct at leak\.c:6:1\); fix: end the mapping "
        r"with 'target exit data map\(release: D\)' \(or 'delete'\)",
    "mapper_left.c":
        r"ompsim: check: stale device copy: 'GP' \(16 bytes at host ADDR\) changed on the host \(first at "
        r"byte 0\) after it was last copied to the device, and the target region main_l20 at "
        r"mapper_left\.c:20:1 uses the present device copy without copying it \(a declare mapper's first "
        r"component left it mapped in the target region main_l17 at mapper_left\.c:17:1: stock never "
        r"releases it, so this region does not copy it again\); fix: 'target update to\(GP\)' before the "
        r"region, or 'map\(always, to: GP\)'",
}

#: Faults the checker makes happen on sim (guard pages, quarantine), and their report.
FAULTS = {
    "out_of_section.c":
        r"ompsim: check: out of section: the target region main_l12 at out_of_section\.c:12:1 read or wrote "
        r"byte 128 of the device copy of 'A\[0:32\]' \(128 bytes at host ADDR\) on device 0, past the end of "
        r"the mapped section; fix: map the whole range the region uses \(a longer section than "
        r"'A\[0:32\]'\), or keep its indices inside the section",
    "use_after_unmap.c":
        r"ompsim: check: use after unmap: the target region main_l16 at use_after_unmap\.c:16:1 used the "
        r"device copy of 'Data' \(1024 bytes at host ADDR\) on device 0 after its mapping ended in the "
        r"map-exiting construct at use_after_unmap\.c:14:1; fix: keep 'Data' mapped while device code uses "
        r"its device address \(end the mapping after the region\)",
}


def _pattern(text):
    return re.compile(text.replace("ADDR", ADDR) + "$")


@pytest.mark.parametrize("backend", ["sim", "ours-host"])
@pytest.mark.parametrize("program", sorted(EXPECTED))
def test_planted_bug_is_reported_in_one_line(built, program, backend):
    exe = built(program)
    plain = run(exe, backend, check=None)
    checked = run(exe, backend)
    assert checked.returncode == 0, checked.stderr
    lines = reports(checked.stderr)
    assert len(lines) == 1, checked.stderr
    assert _pattern(EXPECTED[program]).match(lines[0]), lines[0]
    # The checker changes no result: the same output and status as without it.
    assert reports(plain.stderr) == []
    assert (checked.stdout, checked.returncode) == (plain.stdout, plain.returncode)


@pytest.mark.parametrize("backend", ["sim", "ours-host"])
def test_clean_program_gets_no_report(built, backend):
    exe = built("clean.c")
    r = run(exe, backend, check="strict")
    assert r.returncode == 0, r.stderr
    assert reports(r.stderr) == [], r.stderr
    assert r.stdout == "sum 2118 a[5] 200 c[49] 49 s b 2.0 v 8.0\n"


@pytest.mark.parametrize("backend", ["sim", "ours-host"])
def test_device_pointers_the_program_stores_are_not_reported(built, backend):
    # omp_target_memcpy into a mapped block sets bytes the program chose: not device
    # results a release drops, nor a stale copy.
    r = run(built("linked_on_device.c"), backend, check="strict")
    assert (r.returncode, r.stdout) == (0, "sum 3 next host\n"), r.stderr
    assert reports(r.stderr) == [], r.stderr


@pytest.mark.parametrize("program", sorted(FAULTS))
def test_guard_pages_and_quarantine_make_the_bug_fault_on_sim(built, program):
    exe = built(program)
    plain = run(exe, "sim", check=None)
    assert plain.returncode == 0, plain.stderr  # without the checker the bug runs silently
    r = run(exe, "sim")
    assert r.returncode != 0
    lines = reports(r.stderr)
    assert len(lines) == 1, r.stderr
    assert _pattern(FAULTS[program]).match(lines[0]), lines[0]
    # The fault line (the data-fault advisor's) says where the address lies.
    fault = [ln for ln in r.stderr.splitlines() if ln.startswith("ompsim: device 0: kernel ")]
    assert len(fault) == 1, r.stderr
    if program == "out_of_section.c":
        what = (r"read device memory at dev:0x[0-9a-f]+ \(0 bytes past the end of the device copy of 'A\[0:32\]' "
                r"\(128 bytes at dev:0x[0-9a-f]+\)\)")
    else:
        what = (r"read freed device memory at dev:0x[0-9a-f]+ \(0 bytes into the old device copy of 'Data' "
                r"\(1024 bytes\), mapped by the data construct at use_after_unmap.c:12; freed when the data "
                r"construct at use_after_unmap.c:14 ended its mapping\)")
    assert re.search(what, fault[0]), fault[0]


def test_strict_makes_a_reporting_run_fail(built):
    exe = built("leak.c")
    r = run(exe, "sim", check="strict")
    assert r.returncode == 1
    assert r.stdout == "done\n"
    assert reports(r.stderr)[-1] == "ompsim: check: 1 report under OMPSIM_CHECK=strict: exit status 1"


def test_run_check_option_sets_the_mode(built):
    exe = built("dropped_writes.c")
    env = dict(os.environ)
    env.pop("OMPSIM_CHECK", None)
    r = subprocess.run([OMPSIM, "run", "--backend", "sim", "--check=strict", "--", exe], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert r.returncode == 1, r.stderr
    assert len(reports(r.stderr)) == 2  # the report and the strict line
    r = subprocess.run([OMPSIM, "run", "--backend", "host-upstream", "--check", "--", exe],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert "--check applies to ompsim's backends" in r.stderr


@pytest.mark.parametrize("spelling", [["--check"], ["--check", "--"], ["--check", "1"], ["--check=1"]],
                         ids=["bare", "bare-dashes", "value", "joined"])
def test_a_bare_check_before_the_program_turns_the_checker_on(built, spelling):
    # `ompsim run --backend sim --check ./prog`: the program is not --check's optional value.
    exe = built("dropped_writes.c")
    env = dict(os.environ)
    env.pop("OMPSIM_CHECK", None)
    r = subprocess.run([OMPSIM, "run", "--backend", "sim", *spelling, exe], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(reports(r.stderr)) == 1, r.stderr


def test_run_without_a_program_says_so():
    r = subprocess.run([OMPSIM, "run", "--backend", "sim", "--check"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (
        2, "ompsim: run: no program given (ompsim run --backend NAME -- ./prog [args])\n")


def test_bad_mode_is_refused_with_one_line(built):
    exe = built("leak.c")
    r = run(exe, "sim", check="loud")
    assert r.returncode == 0
    assert "ompsim: ignoring OMPSIM_CHECK='loud': not a checker mode (expected 0, 1 (report) or strict)" in r.stderr
    assert reports(r.stderr) == []


def test_reports_are_check_trace_events(built, tmp_path):
    exe = built("stale_copy.c")
    trace = tmp_path / "trace.jsonl"
    r = run(exe, "sim", extra_env={"OMPSIM_TRACE": "check", "OMPSIM_TRACE_FILE": str(trace)})
    assert r.returncode == 0
    events = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    checks = [e for e in events if e.get("cat") == "check"]
    assert [(e["event"], e["check"], e["name"]) for e in checks] == [("report", "stale device copy", "A")]
    assert checks[0]["region"] == "the target region main_l12 at stale_copy.c:12:1"
    shown = subprocess.run([OMPSIM, "trace", "show", str(trace)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
    assert shown.returncode == 0, shown.stdout
    assert "stale device copy" in shown.stdout


def test_matrix_map_check_fails_a_passing_cell_that_was_reported(tmp_path):
    # `ompsim matrix --map-check`: the sim column runs under the checker, and a
    # report turns a pass into a failure naming the line; other columns are as before.
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(OMPSIM), "..", "conformance"))
    from harness.runner import Cell, run_cell
    from check_helpers import PROGRAMS
    out, work = str(tmp_path / "out"), str(tmp_path)
    for program, backend, map_check, code in (("leak.c", "sim", False, "PASS"), ("leak.c", "sim", True, "FAIL"),
                                              ("leak.c", "ours-host", True, "PASS"),
                                              ("clean.c", "sim", True, "PASS")):
        res, record = run_cell(Cell(os.path.join(PROGRAMS, program), backend, "pass", PROGRAMS,
                                    map_check=map_check), out, work)
        assert res.code == code, (program, backend, map_check, res.reason)
        if code == "FAIL":
            assert res.reason.startswith("the map checker reported: ompsim: check: leak: "), res.reason


def test_leak_report_at_a_fortran_program_end(built):
    # flang's program end runs exit() from its runtime; the report comes from an exit
    # handler, after the main thread's thread_locals are destroyed (the checker keeps none
    # there: reading one once crashed a suite program, though not reliably this one).
    exe = built("leak_fortran.f90")
    plain = run(exe, "sim", check=None)
    r = run(exe, "sim")
    assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout) == (0, "done 1\n"), r.stderr
    lines = reports(r.stderr)
    assert len(lines) == 1, r.stderr
    # The variable, though flang-22's map names put the source file first.
    assert re.match(r"ompsim: check: leak: 'a' \(4096 bytes at host 0x[0-9a-f]+\) is still mapped on device 0 "
                    r"at exit \(reference count 1, mapped by the map-entering construct at .*:7:9\)", lines[0]), lines[0]


def test_inspect_lists_a_traced_runs_check_reports_with_names(built, tmp_path):
    # `ompsim inspect TRACE`: the run's launches and mappings by name, then each report once.
    exe = built("stale_copy.c")
    trace = tmp_path / "trace.jsonl"
    r = run(exe, "sim", extra_env={"OMPSIM_TRACE": "all", "OMPSIM_TRACE_FILE": str(trace)})
    assert r.returncode == 0
    shown = subprocess.run([OMPSIM, "inspect", str(trace)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert re.fullmatch(r"    device 0: __omp_offloading_\w+_main_l12 x1", lines[lines.index("  launches (1):") + 1])
    assert "  mappings created (2): A, Sum" in lines
    at = lines.index("  map checker reports (1):")
    assert re.fullmatch("    " + EXPECTED["stale_copy.c"][len("ompsim: check: "):].replace("ADDR", ADDR),
                        lines[at + 1]), lines[at + 1]


def test_inspect_of_a_run_without_findings_says_so(built, tmp_path):
    exe = built("clean.c")
    trace = tmp_path / "trace.jsonl"
    assert run(exe, "sim", extra_env={"OMPSIM_TRACE": "all", "OMPSIM_TRACE_FILE": str(trace)}).returncode == 0
    shown = subprocess.run([OMPSIM, "inspect", str(trace)], stdout=subprocess.PIPE, text=True, timeout=60)
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[-1] == "  no findings (no check reports, faults or errors in the trace)"


def test_inspect_of_a_malformed_trace_is_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"cat": "map", "event": "enter"}\n')
    shown = subprocess.run([OMPSIM, "inspect", str(bad)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert shown.returncode == 2
    assert shown.stderr == '%s:1: malformed trace line: no "seq" at the end of the event\n' % ("ompsim: " + str(bad))


def test_without_debug_info_a_report_names_the_frame_the_block_was_mapped_from(tmp_path):
    # No map names without -g: the leak at exit names the block as the symbolizer did when
    # it was mapped (main's frame), not the frame that happens to hold the address at exit.
    exe = compile_program(os.path.join(PROGRAMS, "leak.c"), tmp_path, debug=False)
    r = run(exe, "sim")
    lines = reports(r.stderr)
    assert len(lines) == 1, r.stderr
    assert re.match(r"ompsim: check: leak: <stack of 'main'> \(128 bytes at host 0x[0-9a-f]+\) is still mapped on "
                    r"device 0 at exit \(reference count 1, mapped by the map-entering construct\)", lines[0]), lines[0]
