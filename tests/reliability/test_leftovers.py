"""Nothing is left in /dev/shm (or /tmp) after any outcome on sim.

libomp registers every process that loads it as `__KMP_REGISTERED_LIB_<pid>_<uid>`
and removes the file in a destructor, which never runs in an executor that
faulted, was killed or was stopped, nor in a host ending on a fatal error.
"""
import json
import os
import signal
import time

import pytest

from reliability_helpers import executors_of, run, start, wait_for_executor

PROGRAM = "device_faults.c"


def registrations(pid):
    found = []
    for d in ("/dev/shm", "/tmp"):
        try:
            found += [os.path.join(d, n) for n in os.listdir(d) if n.startswith("__KMP_REGISTERED_LIB_%d_" % pid)]
        except OSError:
            pass
    return found


def executor_pids(trace_file):
    with open(trace_file) as f:
        events = [json.loads(l) for l in f if l.strip()]
    return [e["executor_pid"] for e in events if e.get("event") == "executor-start" and "executor_pid" in e]


@pytest.mark.parametrize("outcome", ["ok", "wild", "abort", "null", "loop", "parallel-wild", "parallel-loop"])
def test_no_registration_file_left(built, tmp_path, outcome):
    trace = tmp_path / "trace.jsonl"
    env = {"OMPSIM_TRACE": "image", "OMPSIM_TRACE_FILE": str(trace)}
    if outcome.endswith("loop"):
        env["OMPSIM_KERNEL_TIMEOUT"] = "1"  # the executor is killed by the watchdog
    r = run(built(PROGRAM), "sim", [outcome], env=env)
    assert (r.rc == 0) == (outcome == "ok"), r.err
    pids = executor_pids(trace)
    assert pids, "no executor-start event in the trace"
    for pid in pids + [r.pid]:
        assert registrations(pid) == [], "left behind by process %d (%s)" % (pid, outcome)


def test_no_registration_file_left_when_the_executor_is_killed(built, tmp_path):
    p = start(built(PROGRAM), "sim", ["parallel-loop"])
    victim = wait_for_executor(p.pid)
    deadline = time.time() + 60
    while not registrations(victim) and time.time() < deadline:  # its libomp has started
        time.sleep(0.05)
    assert registrations(victim), "the executor's libomp never registered"
    os.kill(victim, signal.SIGKILL)
    p.communicate(timeout=60)
    assert p.returncode != 0  # a lost device fails the target region: abort, as stock
    assert executors_of(p.pid) == []
    assert registrations(victim) == [] and registrations(p.pid) == []
