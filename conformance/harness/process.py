"""Child processes that go away whole: each runs in its own session, and a timeout (or
Ctrl-C, or any other way out) kills its whole process group, grandchildren included.

A compiler driver runs its jobs (clang -cc1, the linker wrapper, lld) as children: killing
only the driver on a timeout left them running, orphaned, for as long as they liked."""
import os
import signal
import subprocess


def communicate(argv, timeout, **popen_args):
    """(returncode, stdout, stderr, timed_out) of argv run in its own session with `timeout`
    seconds; on a timeout the group is killed and returncode is -SIGKILL."""
    proc = subprocess.Popen(argv, start_new_session=True, **popen_args)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        return -signal.SIGKILL, out, err, True
    except BaseException:
        kill_group(proc)
        proc.wait()
        raise


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
