"""`--repeat N`: each cell builds once and runs its program N times; a cell that fails some
runs only is flaky. Unit tests of the combining (no compiler), then a small suite of
host-only programs through `ompsim matrix --repeat` and through pytest."""
import json
import os
import subprocess

import pytest

from harness import outcome as oc
from harness.runner import repeated
from counted import counted_program

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
OMPSIM = os.path.join(ROOT, "scripts", "ompsim")

PASSED = oc.Outcome(oc.PASS, "", True)
FAILED = oc.Outcome(oc.FAIL, "exit 1: FAIL: x", False)
TIMED_OUT = oc.Outcome(oc.TIMEOUT, "no exit within the time limit", False)
XFAILED = oc.Outcome(oc.XFAIL, "known bug [exit 1]", True)
XPASSED = oc.Outcome(oc.XPASS, "passed, but XFAIL says: known bug", False)


def test_every_run_passing_passes():
    o = oc.combine_runs([PASSED] * 5, 5)
    assert (o.code, o.expected, o.reason) == (oc.PASS, True, "")


def test_some_runs_failing_is_flaky_with_the_run_numbers():
    runs = [PASSED] * 200
    for n in (17, 54, 90):
        runs[n - 1] = oc.Outcome(oc.FAIL, "exit 1: FAIL: run %d" % n, False)
    o = oc.combine_runs(runs, 200)
    assert (o.code, o.expected) == (oc.FAIL, False)
    assert o.reason == "flaky: failed 3 of 200 runs (runs 17, 54, 90); first failure: exit 1: FAIL: run 17"
    assert oc.failed_runs(runs) == [17, 54, 90]


def test_many_failed_runs_are_listed_up_to_a_limit():
    runs = [FAILED, PASSED] * 30
    o = oc.combine_runs(runs, 60)
    assert "failed 30 of 60 runs (runs 1, 3, 5," in o.reason and "39 and 10 more)" in o.reason, o.reason


def test_every_run_failing_is_reported_as_one_run_would_be():
    o = oc.combine_runs([FAILED] * 4, 4)
    assert (o.code, o.expected, o.reason) == (oc.FAIL, False, "exit 1: FAIL: x (failed all 4 runs)")
    o = oc.combine_runs([XFAILED] * 4, 4)
    assert (o.code, o.expected, o.reason) == (oc.XFAIL, True, "known bug [exit 1] (failed all 4 runs)")
    o = oc.combine_runs([XPASSED] * 4, 4)
    assert (o.code, o.expected) == (oc.XPASS, False)


def test_xfail_passing_some_runs_is_flaky_not_xfail_or_xpass():
    o = oc.combine_runs([XFAILED, XPASSED, XFAILED], 3)
    assert (o.code, o.expected) == (oc.FAIL, False)
    assert o.reason == ("flaky: failed 2 of 3 runs (runs 1, 3), passed the other 1 though XFAIL expects every "
                        "run to fail; first failure: known bug [exit 1]")


def test_a_timeout_stops_the_repeats_and_says_so():
    o = oc.combine_runs([PASSED, PASSED, TIMED_OUT], 10)
    assert (o.code, o.expected) == (oc.TIMEOUT, False)
    assert o.reason == ("flaky: failed 1 of 3 runs (run 3); stopped repeating after run 3 of 10: it timed out; "
                        "first failure: no exit within the time limit")
    o = oc.combine_runs([TIMED_OUT], 10)
    assert o.code == oc.TIMEOUT and o.reason.endswith(
        "(failed its only run; stopped repeating after run 1 of 10: it timed out)"), o.reason
    # Under an XFAIL a hang is still unexpected.
    o = oc.combine_runs([XFAILED, TIMED_OUT], 5)
    assert (o.code, o.expected) == (oc.TIMEOUT, False)


def _fake_runs(outcomes):
    """A `once` for runner.repeated that plays back `outcomes`, filling the record as a run does."""
    record = {"exit_code": None, "stdout_tail": "", "stderr_tail": "", "run_s": None}
    calls = []

    def once():
        o = outcomes[len(calls)]
        calls.append(o)
        record.update(exit_code=0 if o.code in oc.RUN_PASSED else 1, stdout_tail="run %d\n" % len(calls),
                      stderr_tail="", run_s=0.5)
        return o
    return record, calls, once


def test_repeated_makes_every_run_and_keeps_the_first_failure():
    record, calls, once = _fake_runs([PASSED, FAILED, PASSED, FAILED, PASSED])
    o = repeated(5, record, once)
    assert len(calls) == 5 and o.code == oc.FAIL and o.reason.startswith("flaky: failed 2 of 5 runs (runs 2, 4)")
    assert record["runs"] == 5 and record["failed_runs"] == [2, 4]
    assert (record["exit_code"], record["stdout_tail"], record["run_s"]) == (1, "run 2\n", 2.5)
    # Passing runs do not stop early: all N are made.
    record, calls, once = _fake_runs([PASSED] * 6)
    assert repeated(6, record, once) is PASSED and len(calls) == 6 and record["failed_runs"] == []
    # A timeout does.
    record, calls, once = _fake_runs([PASSED, TIMED_OUT, PASSED])
    assert repeated(3, record, once).code == oc.TIMEOUT and len(calls) == 2 and record["runs"] == 2
    # --repeat 1: the one run, the record as it always was.
    record, calls, once = _fake_runs([FAILED])
    assert repeated(1, record, once) is FAILED and "runs" not in record


# --- end to end: host-only programs --------------------------------------------------------

def every_third(name, compare):
    """Fails every 3rd run (the 3rd, 6th, ...) with `==`, every other run with `!=`."""
    return counted_program(name, r'if (n %% 3 %s 0) { printf("FAIL: run %%d\n", n); return 1; }' % compare)


def _suite(tmp_path):
    suite = tmp_path / "reps"
    suite.mkdir()
    (suite / "flaky.c").write_text(every_third("flaky", "=="))
    (suite / "flaky_xfail.c").write_text(every_third("flaky_xfail", "!="))
    # lit style: the compile builds once, the RUN step repeats.
    (suite / "flaky_lit.c").write_text("// RUN: %libomptarget-compile-generic && %libomptarget-run-generic\n"
                                       + every_third("flaky_lit", "=="))
    (suite / "steady.c").write_text("int main(void) { return 0; }\n")
    (suite / "always_fails.c").write_text("int main(void) { return 1; }\n")
    (suite / "ompsim-expectations.txt").write_text(
        "always_fails.c XFAIL true -- returns 1 on purpose\nflaky_xfail.c XFAIL true -- expected to fail\n")
    return suite


def _records(out):
    with open(os.path.join(str(out), "results.json")) as f:
        return {r["program"]: r for r in json.load(f)["records"]}


@pytest.mark.e2e
def test_repeat_reports_flaky_cells_with_their_runs(tmp_path):
    suite = _suite(tmp_path)
    r = subprocess.run([OMPSIM, "matrix", "--no-build", "-q", "-j", "1", "--backend", "host-upstream",
                        "--suite", str(suite), "--repeat", "7", "--out", str(tmp_path / "out")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 1, r.stdout
    got = _records(tmp_path / "out")
    flaky = got["reps/flaky.c"]
    assert (flaky["outcome"], flaky["expected"]) == ("FAIL", False), flaky
    assert flaky["reason"] == "flaky: failed 2 of 7 runs (runs 3, 6); first failure: exit 1: FAIL: run 3"
    assert (flaky["repeat"], flaky["runs"], flaky["failed_runs"]) == (7, 7, [3, 6])
    assert flaky["exit_code"] == 1 and "FAIL: run 3" in flaky["stdout_tail"]
    lit = got["reps/flaky_lit.c"]
    assert (lit["outcome"], lit["runs"], lit["failed_runs"]) == ("FAIL", 7, [3, 6]), lit
    assert lit["reason"].startswith("flaky: failed 2 of 7 runs (runs 3, 6); first failure: RUN `"), lit
    mixed = got["reps/flaky_xfail.c"]
    assert (mixed["outcome"], mixed["expected"], mixed["failed_runs"]) == ("FAIL", False, [1, 2, 4, 5, 7]), mixed
    assert "XFAIL expects every run to fail" in mixed["reason"]
    steady = got["reps/steady.c"]
    assert (steady["outcome"], steady["runs"], steady["failed_runs"]) == ("PASS", 7, []), steady
    xfail = got["reps/always_fails.c"]
    assert (xfail["outcome"], xfail["expected"], xfail["failed_runs"]) == ("XFAIL", True, list(range(1, 8))), xfail
    assert xfail["reason"].endswith("(failed all 7 runs)"), xfail


@pytest.mark.e2e
def test_one_run_can_pass_a_flaky_program(tmp_path):
    suite = _suite(tmp_path)
    base = ["/usr/bin/python3", "-m", "pytest", os.path.join(ROOT, "conformance", "test_matrix.py"), "-q",
            "-p", "no:cacheprovider", "-p", "no:xdist", "--backend=host-upstream", "--suite=%s" % suite]
    bad = subprocess.run(base + ["--conformance-out=%s" % (tmp_path / "bad"), "--repeat=0"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert bad.returncode == 4 and "--repeat 0: expected N >= 1" in bad.stdout, bad.stdout
    r = subprocess.run(base + ["--conformance-out=%s" % (tmp_path / "out")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0, r.stdout
    got = _records(tmp_path / "out")
    assert {k: (v["outcome"], v["expected"]) for k, v in got.items()} == {
        "reps/flaky.c": ("PASS", True), "reps/flaky_lit.c": ("PASS", True), "reps/steady.c": ("PASS", True),
        "reps/flaky_xfail.c": ("XFAIL", True), "reps/always_fails.c": ("XFAIL", True)}
    assert all("runs" not in v for v in got.values())    # --repeat 1: today's records
