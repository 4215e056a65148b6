"""A timed-out step takes its whole process tree with it (harness/process.py): a compiler
driver's jobs used to go on running, orphaned, after the driver was killed."""
import os
import subprocess
import time

from harness.process import communicate


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for every purpose here (its parent, the test's shell, was killed).
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_timeout_kills_the_grandchildren(tmp_path):
    pidfile = tmp_path / "pid"
    # A "driver" that starts a long "job" in the background, as clang starts clang -cc1.
    rc, out, _, timed_out = communicate(["bash", "-c", "sleep 300 & echo $! > %s; wait" % pidfile], 1,
                                        stdout=subprocess.PIPE, text=True)
    assert timed_out and rc < 0
    job = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(job) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(job), "the driver's job %d outlived the timeout" % job


def test_a_finished_step_reports_its_status_and_output():
    rc, out, _, timed_out = communicate(["bash", "-c", "echo built; exit 3"], 10, stdout=subprocess.PIPE, text=True)
    assert (rc, out, timed_out) == (3, "built\n", False)
