"""A timed-out step takes its whole process tree with it (harness/process.py): a compiler
driver's jobs used to go on running, orphaned, after the driver was killed."""
import os
import subprocess
import time

import pytest

from harness.process import communicate
from ompsim_base import leftovers


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


# A program killed by a signal leaves libomp's registration file in /dev/shm, as any
# libomp program does (stock's abort() too); the step removes it. The "program" here is a
# shell that makes such a file for its own pid and then dies the way the case says. It
# makes it in a folder of the test's own, which the step is told is the place
# (OMPSIM_LEFTOVER_PLACES): in /dev/shm, another worker of a parallel run, ending a killed
# program of its own, may remove the file first.
REGISTER_AND_DIE = 'echo x > %s/__KMP_REGISTERED_LIB_$$_%d; echo $$ > %s; %s'


@pytest.fixture
def place(tmp_path, monkeypatch):
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setenv(leftovers.PLACES_VARIABLE, str(shm))
    return shm


def register_and_die(place, pidfile, ending):
    return REGISTER_AND_DIE % (place, os.getuid(), pidfile, ending)


def _registration(place, pidfile):
    return os.path.join(str(place), "__KMP_REGISTERED_LIB_%s_%d" % (pidfile.read_text().strip(), os.getuid()))


def test_a_program_killed_by_a_signal_leaves_no_registration(tmp_path, place):
    pidfile = tmp_path / "pid"
    rc, _, _, _ = communicate(["bash", "-c", register_and_die(place, pidfile, "kill -9 $$")], 30)
    assert rc == -9
    assert not os.path.exists(_registration(place, pidfile))


def test_a_pipeline_member_killed_by_a_signal_leaves_no_registration(tmp_path, place):
    pidfile = tmp_path / "pid"
    inner = register_and_die(place, pidfile, "kill -6 $$")
    rc, _, _, _ = communicate(["bash", "-o", "pipefail", "-c", "bash -c '%s' | cat" % inner], 30)
    assert rc == 128 + 6
    assert not os.path.exists(_registration(place, pidfile))


def test_an_expected_crash_leaves_no_registration(tmp_path, place):
    pidfile = tmp_path / "pid"
    inner = register_and_die(place, pidfile, "kill -6 $$")
    rc, _, _, _ = communicate(["bash", "-c", "bash -c '%s' || true" % inner], 30, crash_expected=True)
    assert rc == 0
    assert not os.path.exists(_registration(place, pidfile))


def test_a_program_that_exits_keeps_what_it_left(tmp_path, place):
    # Not killed: what it leaves is for the run's leftover check to name.
    pidfile = tmp_path / "pid"
    rc, _, _, _ = communicate(["bash", "-c", register_and_die(place, pidfile, "exit 3")], 30)
    assert rc == 3
    assert os.path.exists(_registration(place, pidfile))
