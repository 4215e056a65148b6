"""Child processes that go away whole: each runs in its own session, and a timeout (or
Ctrl-C, or any other way out) kills its whole process group, grandchildren included.

A program killed by a signal (stock's abort(), a timeout) leaves libomp's registration
file in /dev/shm, as every libomp program does; the run removes it (docs/reliability.md).

A compiler driver runs its jobs (clang -cc1, the linker wrapper, lld) as children: killing
only the driver on a timeout left them running, orphaned, for as long as they liked."""
import os
import signal
import subprocess
import time

from ompsim_base import leftovers


def communicate(argv, timeout, crash_expected=False, **popen_args):
    """(returncode, stdout, stderr, timed_out) of argv run in its own session with `timeout`
    seconds; on a timeout the group is killed and returncode is -SIGKILL. `crash_expected`:
    a process of argv is meant to die by a signal, whatever status argv ends with."""
    started = time.time()
    proc = subprocess.Popen(argv, start_new_session=True, **popen_args)
    try:
        out, err = proc.communicate(timeout=timeout)
        forget_killed(proc, started, crash_expected)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        leftovers.forget_registrations_since(started)
        return -signal.SIGKILL, out, err, True
    except BaseException:
        kill_group(proc)
        proc.wait()
        raise


def forget_killed(proc, started, crash_expected=False):
    """Removes libomp's registration files of what a signal killed: `proc` itself, or a
    process of its shell pipeline (status 128+N, or a crash `not --crash` expected), whose
    pid the shell does not say."""
    if proc.returncode < 0:
        leftovers.forget_registration(proc.pid)
    elif proc.returncode > 128 or crash_expected:
        leftovers.forget_registrations_since(started)


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
