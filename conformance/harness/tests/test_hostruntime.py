"""A run that a known defect of the host OpenMP runtime ends (hostruntime.DEFECTS) is made
again, the record says so, and nothing else is: unit tests of the rerun, then host-only
programs that print libomp's line through `ompsim matrix`."""
import json
import os
import subprocess

import pytest

from harness import hostruntime
from harness import outcome as oc
from harness.runner import past_host_runtime_defects, repeated
from counted import counted_program

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
OMPSIM = os.path.join(ROOT, "scripts", "ompsim")

#: What libomp 19.1.7 prints when its hidden helper task race ends a run (a stock run's
#: stderr, OpenMP_VV's test_target_teams_distribute_nowait.c on host-upstream).
LIBOMP_ABORT = ("Assertion failure at kmp_tasking.cpp(4368): task_team != __null.\n"
                "OMP: Error #13: Assertion failure at kmp_tasking.cpp(4368).\n"
                "OMP: Hint Please submit a bug report with this message, compile and run commands used, and "
                "machine configuration info including native compiler and operating system versions.\n")

PASSED = oc.Outcome(oc.PASS, "", True)
ABORTED = oc.Outcome(oc.FAIL, "killed by signal 6: " + LIBOMP_ABORT.splitlines()[0], False)
OTHER = oc.Outcome(oc.FAIL, "exit 1: FAIL: x", False)
XFAILED = oc.Outcome(oc.XFAIL, "known bug [killed by signal 6]", True)


def _played(runs):
    """A record and a `once` that plays back `runs` ((Outcome, stderr) pairs) as runs do."""
    record = {"exit_code": None, "stdout_tail": "", "stderr_tail": "", "run_s": None, "notes": ""}
    calls = []

    def once():
        outcome, stderr = runs[len(calls)]
        calls.append(outcome)
        record.update(exit_code=0 if outcome.code in oc.RUN_PASSED else 134, stderr_tail=stderr, run_s=0.1)
        return outcome
    return record, calls, once


def test_the_defect_is_found_by_its_exact_line_only():
    assert hostruntime.found("noise\n" + LIBOMP_ABORT).name == "libomp 19.1.7's hidden helper task race"
    assert hostruntime.found(LIBOMP_ABORT.replace("4368", "4369")) is None
    assert hostruntime.found("OMP: Error #13: Assertion failure at kmp_tasking.cpp(4368).") is None
    assert hostruntime.found("") is None


def test_a_run_the_defect_ended_is_made_again_and_the_record_says_so():
    record, calls, once = _played([(ABORTED, LIBOMP_ABORT), (ABORTED, LIBOMP_ABORT), (PASSED, "")])
    assert past_host_runtime_defects(record, once)() is PASSED and len(calls) == 3
    assert record["host_runtime_reruns"] == 2
    assert record["notes"] == "libomp 19.1.7's hidden helper task race ended 2 runs of this cell (docs/reliability.md)"


def test_a_run_that_keeps_hitting_the_defect_fails_naming_it():
    runs = [(ABORTED, LIBOMP_ABORT)] * (hostruntime.RERUNS + 1)
    record, calls, once = _played(runs)
    o = past_host_runtime_defects(record, once)()
    assert len(calls) == hostruntime.RERUNS + 1 and (o.code, o.expected) == (oc.FAIL, False)
    assert o.reason.startswith("every one of %d runs was ended by libomp 19.1.7's hidden helper task race: "
                               "killed by signal 6" % (hostruntime.RERUNS + 1)), o.reason
    assert record["notes"].endswith("task race ended %d runs of this cell (docs/reliability.md)"
                                    % (hostruntime.RERUNS + 1)), record["notes"]
    # Under an XFAIL too: the expected failure is another one, and was never seen.
    record, calls, once = _played([(XFAILED, LIBOMP_ABORT)] * (hostruntime.RERUNS + 1))
    assert past_host_runtime_defects(record, once)().code == oc.FAIL


def test_other_failures_and_passes_are_never_made_again():
    for first in ((OTHER, "FAIL: x\n"), (OTHER, LIBOMP_ABORT.replace("4368", "100")), (PASSED, LIBOMP_ABORT)):
        record, calls, once = _played([first, (PASSED, "")])
        assert past_host_runtime_defects(record, once)() is first[0] and len(calls) == 1
        assert "host_runtime_reruns" not in record and record["notes"] == ""


def test_under_repeat_each_repetition_gets_past_the_defect_and_the_reruns_add_up():
    record, calls, once = _played([(ABORTED, LIBOMP_ABORT), (PASSED, ""), (PASSED, ""),
                                   (ABORTED, LIBOMP_ABORT), (PASSED, "")])
    o = repeated(3, record, past_host_runtime_defects(record, once))
    assert o is PASSED and len(calls) == 5 and record["failed_runs"] == [] and record["host_runtime_reruns"] == 2
    # One note for the cell, with the runs of every repetition.
    assert record["notes"] == "libomp 19.1.7's hidden helper task race ended 2 runs of this cell (docs/reliability.md)"


# --- end to end: host-only programs --------------------------------------------------------

def aborts(name, when, line):
    """Prints libomp's line (at `line` of kmp_tasking.cpp) and aborts on the runs `when` selects."""
    return counted_program(name, 'if (%s) { fputs("Assertion failure at kmp_tasking.cpp(%s): task_team != __null.\\n", '
                                 'stderr); abort(); }' % (when, line))


def _suite(tmp_path):
    suite = tmp_path / "hostrt"
    suite.mkdir()
    (suite / "first_run.c").write_text(aborts("first_run", "n == 1", 4368))
    (suite / "first_run_lit.c").write_text("// RUN: %libomptarget-compile-generic && %libomptarget-run-generic\n"
                                           + aborts("first_run_lit", "n == 1", 4368))
    (suite / "every_run.c").write_text(aborts("every_run", "1", 4368))
    (suite / "another_line.c").write_text(aborts("another_line", "n == 1", 4369))
    return suite


@pytest.mark.e2e
def test_the_matrix_makes_runs_the_defect_ended_again_and_says_so(tmp_path):
    suite = _suite(tmp_path)
    r = subprocess.run([OMPSIM, "matrix", "--no-build", "-q", "-j", "1", "--backend", "host-upstream",
                        "--suite", str(suite), "--out", str(tmp_path / "out")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 1, r.stdout
    with open(os.path.join(str(tmp_path / "out"), "results.json")) as f:
        got = {rec["program"]: rec for rec in json.load(f)["records"]}
    for name in ("hostrt/first_run.c", "hostrt/first_run_lit.c"):
        assert (got[name]["outcome"], got[name]["host_runtime_reruns"]) == ("PASS", 1), got[name]
        assert got[name]["notes"] == ("libomp 19.1.7's hidden helper task race ended 1 run of this cell "
                                      "(docs/reliability.md)")
    every = got["hostrt/every_run.c"]
    assert (every["outcome"], every["host_runtime_reruns"]) == ("FAIL", hostruntime.RERUNS + 1), every
    assert every["reason"].startswith("every one of %d runs was ended by libomp" % (hostruntime.RERUNS + 1))
    other = got["hostrt/another_line.c"]
    assert other["outcome"] == "FAIL" and "host_runtime_reruns" not in other, other
    assert ("host runtime: a known defect of libomp ended %d runs of 3 cells (a run it ends is made again, up to %d "
            "more times)"
            % (hostruntime.RERUNS + 3, hostruntime.RERUNS)) in r.stdout, r.stdout
