"""Starting the sim executor: bounded, never orphaned, and a missing executor is named."""
import os
import re
import signal
import stat
import subprocess
import textwrap
import threading
import time

import pytest

from ompsim_base import backends
from reliability_helpers import executors_of, ompsim_lines, run, start, wait_for_executor, wait_gone

PROGRAM = "device_faults.c"  # "ok": one target region, prints r=42


def stuck_executor(tmp_path):
    """An `ompsim-device` that never answers its host (a stand-in for one stuck before the handshake)."""
    path = tmp_path / "ompsim-device"
    path.write_text("#!/usr/bin/python3\nimport time\nwhile True:\n    time.sleep(1)\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def forking_executor(tmp_path, marker):
    """An `ompsim-device` script that starts a child, records both pids, and never answers.

    Both processes carry `marker` in their command line, so a test can look
    for anything of the run that is left."""
    path = tmp_path / "ompsim-device"
    path.write_text(textwrap.dedent("""\
        #!/usr/bin/python3
        import os, sys, time
        d = %r
        child = os.fork()
        if child == 0:
            os.execv("/usr/bin/python3", ["python3", "-c",
                     "import os, sys, time\\nopen(os.path.join(sys.argv[1], 'child.pid'), 'w').write(str(os.getpid()))"
                     "\\nwhile True: time.sleep(1)", d, %r])
        open(os.path.join(d, "executor.pid"), "w").write(str(os.getpid()))
        while True:
            time.sleep(1)
        """) % (str(tmp_path), marker))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def processes_with(marker):
    r = subprocess.run(["pgrep", "-f", marker], stdout=subprocess.PIPE, text=True)
    return [int(p) for p in r.stdout.split() if int(p) != os.getpid()]


def wait_for_file(path, seconds=60):
    deadline = time.time() + seconds
    while not path.exists() or not path.read_text():
        if time.time() > deadline:
            pytest.fail("%s never appeared" % path)
        time.sleep(0.05)
    return int(path.read_text())


def test_executor_that_never_starts_is_bounded(built, tmp_path):
    exe = stuck_executor(tmp_path)
    r = run(built(PROGRAM), "sim", ["ok"],
            env={"OMPSIM_EXECUTOR": exe, "OMPSIM_EXECUTOR_START_TIMEOUT": "2"})
    line = r.single_error()  # non-zero exit, one line, and the stuck executor is gone
    assert re.fullmatch(r"ompsim: .*device 0: executor %s did not complete its handshake within 2s "
                        r"\(OMPSIM_EXECUTOR_START_TIMEOUT\); it was killed with the processes it started"
                        % re.escape(exe), line), line
    assert "r=42" not in r.out


def test_forking_executor_gives_up_at_the_default_and_leaves_nothing(built, tmp_path):
    """No OMPSIM_EXECUTOR_START_TIMEOUT: the default bound (10 s) ends the run
    with one line, and the executor's process group goes with it, so neither
    the script nor the child it started is left."""
    marker = "ompsim-forking-executor-%d" % os.getpid()
    exe = forking_executor(tmp_path, marker)
    env = {"OMPSIM_EXECUTOR": exe}
    r = run(built(PROGRAM), "sim", ["ok"], env=env)
    line = r.single_error()
    assert re.fullmatch(r"ompsim: .*device 0: executor %s did not complete its handshake within 10s "
                        r"\(OMPSIM_EXECUTOR_START_TIMEOUT\); it was killed with the processes it started"
                        % re.escape(exe), line), line
    executor, child = wait_for_file(tmp_path / "executor.pid", 0), wait_for_file(tmp_path / "child.pid", 0)
    assert wait_gone(executor, 5), "executor script %d outlived the run" % executor
    assert wait_gone(child, 5), "the executor's child %d outlived the run" % child
    assert processes_with(marker) == []


def test_host_killed_before_the_handshake_takes_a_forking_executor_along(built, tmp_path):
    """SIGKILL of the host: the executor dies with it (its death signal), and
    the guard in its process group kills the child it started (the script
    cannot be changed, and the child is not the host's)."""
    marker = "ompsim-forking-executor-killed-%d" % os.getpid()
    p = start(built(PROGRAM), "sim", ["ok"], env={"OMPSIM_EXECUTOR": forking_executor(tmp_path, marker)})
    try:
        executor = wait_for_file(tmp_path / "executor.pid")
        child = wait_for_file(tmp_path / "child.pid")
        p.kill()
        p.communicate(timeout=60)
        assert p.returncode == -signal.SIGKILL
        assert wait_gone(executor, 5), "executor %d survived SIGKILL of its host by 5 s" % executor
        assert wait_gone(child, 5), "the executor's child %d survived SIGKILL of the host by 5 s" % child
        deadline = time.time() + 5
        while processes_with(marker) and time.time() < deadline:
            time.sleep(0.05)
        assert processes_with(marker) == []
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_host_killed_before_the_handshake_takes_the_executor_along(built, tmp_path):
    p = start(built(PROGRAM), "sim", ["ok"], env={"OMPSIM_EXECUTOR": stuck_executor(tmp_path)})
    victim = wait_for_executor(p.pid)
    p.kill()
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    assert wait_gone(victim, 5), "executor %d survived SIGKILL of its host by 5 s" % victim


def test_missing_executor_is_named(built, tmp_path):
    missing = str(tmp_path / "no-such-dir" / "ompsim-device")
    r = run(built(PROGRAM), "sim", ["ok"], env={"OMPSIM_EXECUTOR": missing})
    line = r.single_error()
    assert re.search(r"executor %s not found or not executable \(set OMPSIM_EXECUTOR\)" % re.escape(missing),
                     line), line


def test_executor_that_is_not_executable_is_named(built, tmp_path):
    path = tmp_path / "ompsim-device"
    path.write_text("not a program\n")
    os.chmod(path, 0o644)
    r = run(built(PROGRAM), "sim", ["ok"], env={"OMPSIM_EXECUTOR": str(path)})
    line = r.single_error()
    assert re.search(r"executor %s not found or not executable" % re.escape(str(path)), line), line


def test_image_needing_libatomic_runs_without_the_host_runtime_in_the_executor(built):
    """libatomic (which flang adds to every device link) is a plain system library:
    the executor loads it for the image but not the host runtime and its libLLVM."""
    exe = built("wide_atomics.c", translate="native-cc", extra=("-latomic", "-Xoffload-linker", "-latomic"))
    why = backends.unavailable_reason("sim")
    if why:
        pytest.skip("backend sim unavailable: %s" % why)
    p = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=backends.environment("sim"))
    watchdog = threading.Timer(300, p.kill)  # a hung program fails the test instead of hanging it
    watchdog.start()
    try:
        line = p.stdout.readline()
        assert line == "got=42\n", line + p.stderr.read()
        pids = executors_of(p.pid)
        assert len(pids) == 1, pids
        with open("/proc/%d/maps" % pids[0]) as f:
            maps = f.read()
        assert "libatomic" in maps, "the image's libatomic is not loaded"
        assert "libLLVM" not in maps, "executor %d loaded libLLVM for an image that needs libatomic" % pids[0]
        out, err = p.communicate("\n", timeout=120)
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, "exit %d\n%s" % (p.returncode, err)
    assert ompsim_lines(err) == [], err


def test_executor_started_early_for_an_unused_device_is_stopped(built):
    # The plugin starts device 0's executor as soon as it accepts an image;
    # here the program only ever uses device 1, so that executor is never
    # waited for and must still be stopped, quietly, when the host exits.
    r = run(built(PROGRAM), "sim", ["ok"], env={"OMPSIM_NUM_DEVICES": "2", "OMP_DEFAULT_DEVICE": "1",
                                                "OMPSIM_TRACE": "image"})
    assert r.rc == 0, r.err
    assert "r=42" in r.out, r.out
    assert "executor-start device=1" in r.err, r.err
    assert "executor-start device=0" not in r.err, r.err
    assert r.leftover == [], "executor(s) %s outlived host %d" % (r.leftover, r.pid)


def test_an_arena_the_executor_cannot_map_is_named(built):
    """The executor sets the device up before its handshake; when the arena
    cannot be mapped (here its base is where the host program lies, which the
    executor reserves first), the start fails with one line naming the address."""
    # Without address randomization a position-independent program loads at a
    # fixed base; cat shows which.
    probe = subprocess.run(["setarch", "-R", "cat", "/proc/self/maps"], stdout=subprocess.PIPE, text=True)
    if probe.returncode != 0:
        pytest.skip("setarch -R is not permitted here")
    base = probe.stdout.split("-", 1)[0]
    r = run("setarch", "sim", ["-R", built("device_faults.c"), "ok"], env={"OMPSIM_DEVICE_BASE": "0x" + base})
    line = r.single_error()
    assert re.fullmatch(r"ompsim: device 0: executor \S+ompsim-device could not set up the device: cannot map "
                        r"the device arena at 0x%s \(\d+ bytes\): File exists" % base.lstrip("0"), line), line
