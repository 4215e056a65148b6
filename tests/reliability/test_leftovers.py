"""Nothing is left in /dev/shm (or /tmp) after any outcome on sim.

libomp registers every process that loads it as `__KMP_REGISTERED_LIB_<pid>_<uid>`
and removes that record in a destructor, which never runs in an executor (it ends
with _exit, or with SIGKILL when its host dies) nor in a host ending on a fatal
error or a signal. The executor keeps libomp's record in its environment, never in
a file (simulator/src/ExecutorOpenMPRegistration.cpp); the runtime removes the
host's own file before a fatal exit. A host killed by a signal leaves its own file
as every libomp program does (stock's behaviour): these tests remove that one.
"""
import json
import os
import signal
import time

import pytest

from reliability_helpers import executors_of, run, start, wait_gone

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
def test_no_registration_file_left(built, tmp_path, outcome, keep_registrations):
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


def trace_events(trace_file):
    try:
        with open(trace_file) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    events = []
    for l in lines:
        try:
            events.append(json.loads(l))
        except ValueError:
            pass  # the line being written
    return events


def start_mid_kernel(exe, tmp_path, name, args=("parallel-loop",), new_session=False):
    """Starts `exe` on sim and returns (process, executor pid) once its kernel runs."""
    trace = tmp_path / (name + ".jsonl")
    p = start(exe, "sim", args, env={"OMPSIM_TRACE": "image,launch", "OMPSIM_TRACE_FILE": str(trace)},
              new_session=new_session)
    deadline = time.time() + 120
    while time.time() < deadline:
        events = trace_events(trace)
        pids = [e["executor_pid"] for e in events if e.get("event") == "executor-start"]
        if pids and any(e.get("cat") == "launch" for e in events):
            return p, pids[0]
        if p.poll() is not None:
            pytest.fail("program %s ended before its kernel ran:\n%s" % (name, p.communicate()[1]))
        time.sleep(0.05)
    p.kill()
    pytest.fail("the kernel of %s never started" % name)


def forget_host_registration(pid):
    """Removes the file a host killed by a signal leaves, as any libomp program does."""
    for f in registrations(pid):
        os.unlink(f)


def test_no_registration_file_left_when_the_executor_is_killed(built, tmp_path):
    p, victim = start_mid_kernel(built(PROGRAM), tmp_path, "victim")
    # libomp of the executor runs the kernel's teams, and has registered: in
    # the executor's environment, not in a file.
    assert registrations(victim) == [], "the executor's libomp registered in a file"
    os.kill(victim, signal.SIGKILL)
    p.communicate(timeout=60)
    assert p.returncode != 0  # a lost device fails the target region: abort, as stock
    assert executors_of(p.pid) == []
    forget_host_registration(p.pid)  # stock's abort() leaves the host's
    assert registrations(victim) == []


# Ways a user ends a program mid-kernel: kill -9, kill, Ctrl-C in the shell
# (SIGINT to the whole foreground process group) and SIGINT to the host alone.
ENDINGS = {
    "sigkill": (signal.SIGKILL, False),
    "sigterm": (signal.SIGTERM, False),
    "sigint": (signal.SIGINT, False),
    "ctrl-c": (signal.SIGINT, True),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_host_ended_mid_kernel_leaves_nothing(built, tmp_path, ending):
    signo, whole_group = ENDINGS[ending]
    p, executor = start_mid_kernel(built(PROGRAM), tmp_path, ending, new_session=whole_group)
    if whole_group:
        os.killpg(p.pid, signo)
    else:
        os.kill(p.pid, signo)
    p.communicate(timeout=60)
    assert p.returncode == -signo
    assert wait_gone(executor, 10), "executor %d outlived its host (%s)" % (executor, ending)
    assert registrations(executor) == [], "the executor left its registration (%s)" % ending
    forget_host_registration(p.pid)


def test_twenty_hosts_killed_at_once_leave_nothing(built, tmp_path):
    exe = built("sleeping_kernel.c")
    started = []
    try:
        for i in range(20):
            started.append(start_mid_kernel(exe, tmp_path, "host%d" % i, args=()))
    finally:
        for p, _ in started:
            p.kill()
    for p, executor in started:
        p.communicate(timeout=60)
        assert wait_gone(executor, 20), "executor %d outlived its host" % executor
    left = [f for _, executor in started for f in registrations(executor)]
    for p, _ in started:
        forget_host_registration(p.pid)
    assert left == [], "executors left: %s" % left
