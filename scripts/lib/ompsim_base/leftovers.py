"""What the processes of a test run leave behind (scripts/check-leftovers, docs/reliability.md).

libomp records every process that loads it as `__KMP_REGISTERED_LIB_<pid>_<uid>`, a
file in /dev/shm (or /tmp), and removes it only when the process exits normally. An
ompsim executor never makes that file; a host program killed by a signal leaves its
own, as every libomp program does (stock's behaviour), and whoever killed it removes
it (`forget_registration`).

A run is checked in two steps: `snapshot()` before it, `leftovers(before)` after it.
"""
import json
import os
import re
import time

#: The places libomp (and anything else a run starts) may leave files in.
SHM = "/dev/shm"
PLACES = (SHM, "/tmp")
#: Names other places instead (colon-separated): the tests of scripts/check-leftovers plant
#: files in a folder of their own, where no other process of a parallel run removes them
#: (and where their check removes no other test's files: a stock host program of another
#: worker loads the image it wrote to /tmp a moment later).
PLACES_VARIABLE = "OMPSIM_LEFTOVER_PLACES"
REGISTRATION = re.compile(r"__KMP_REGISTERED_LIB_(\d+)_(\d+)$")
#: pytest's own temporary folders (pytest-of-<user>): kept, by pytest's design.
PYTEST_TEMP = re.compile(r"pytest-of-")
#: Stock libomptarget's host plugin writes each device image it loads to
#: /tmp/tmpfile_XXXXXX (whatever TMPDIR says) and never removes it.
STOCK_HOST_IMAGE = re.compile(r"tmpfile_[A-Za-z0-9]{6}$")


def places():
    named = os.environ.get(PLACES_VARIABLE)
    return tuple(d for d in named.split(":") if d) if named else PLACES


def _registrations():
    """(path, pid) of every libomp registration file in the shared places."""
    for d in places():
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            m = REGISTRATION.match(n)
            if m:
                yield os.path.join(d, n), int(m.group(1))


def _unlink(paths):
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass  # gone meanwhile


def registration_files(pid):
    """Paths of libomp's registration files of process `pid` (any uid)."""
    return [path for path, owner in _registrations() if owner == pid]


def forget_registration(pid):
    """Removes libomp's registration files of `pid`, a process killed by a signal."""
    _unlink(registration_files(pid))


def forget_registrations_since(since):
    """Removes the registration files made since `since` (a time.time()) by processes that
    have exited: after a shell command that reports a process killed by a signal without
    saying which (`prog | FileCheck`). Returns how many it removed."""
    found = [path for path, owner in _registrations() if not alive(owner) and _created_since(path, since)]
    _unlink(found)
    return len(found)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def snapshot(run_tmp=None):
    """What is in the shared places now, and when; `run_tmp` is the run's own TMPDIR."""
    return {"time": time.time(), "run_tmp": run_tmp,
            "places": {d: sorted(os.listdir(d)) if os.path.isdir(d) else [] for d in places()}}


def _created_since(path, since):
    try:
        return os.lstat(path).st_ctime >= since - 1  # ctime has a coarse clock
    except OSError:
        return False  # gone meanwhile


def _made_during(before):
    """(place, name, path) of each entry of the places `before` recorded that is new since
    and was made during the run."""
    for d, old in before["places"].items():
        if not os.path.isdir(d):
            continue
        for n in sorted(set(os.listdir(d)) - set(old)):
            path = os.path.join(d, n)
            if _created_since(path, before["time"]):
                yield d, n, path


def leftovers(before):
    """[(path, why)] of what the run left, one entry per file or folder.

    Counted: a registration file of a process that has exited, made during the
    run, in the places `snapshot()` recorded (/dev/shm and /tmp); any other entry
    made in /dev/shm during the run; and everything in the run's own TMPDIR but
    pytest's folders.
    """
    found = []
    run_tmp = before.get("run_tmp")
    for d, n, path in _made_during(before):
        if run_tmp and os.path.realpath(path) == os.path.realpath(run_tmp):
            continue
        m = REGISTRATION.match(n)
        if m:
            pid = int(m.group(1))
            if not alive(pid):
                found.append((path, "libomp's registration of process %d, which has exited" % pid))
        elif d == SHM:
            found.append((path, "made in /dev/shm during the run"))
    if run_tmp and os.path.isdir(run_tmp):
        for n in sorted(os.listdir(run_tmp)):
            if not PYTEST_TEMP.match(n):
                found.append((os.path.join(run_tmp, n), "left in the run's temporary folder"))
    return found


def remove_stock_host_images(before):
    """Removes the device images stock's host plugin wrote to /tmp during the run (to the
    recorded places but /dev/shm); returns how many. They are ELF files named
    tmpfile_XXXXXX made since the run began."""
    removed = 0
    for d, n, path in _made_during(before):
        if d == SHM or not STOCK_HOST_IMAGE.match(n):
            continue
        try:
            with open(path, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed


def save(state, path):
    with open(path, "w") as f:
        json.dump(state, f)


def load(path):
    with open(path) as f:
        return json.load(f)
