"""Sixteen simulated devices in one process: a kernel on each at once, with
correct results, and small idle executors."""
import os
import subprocess
import threading

import pytest

from ompsim_base import backends
from reliability_helpers import executors_of, ompsim_lines, run

DEVICES = 16


def test_a_kernel_on_each_of_sixteen_devices_at_once(built):
    exe = built("many_devices.c", translate="native-cc")
    r = run(exe, "sim", env={"OMPSIM_NUM_DEVICES": str(DEVICES)}, timeout=300)
    assert r.rc == 0, "exit %d\n%s\n%s" % (r.rc, r.out, r.err)
    assert ompsim_lines(r.err) == [], r.err
    assert "devices=%d mismatches=0" % DEVICES in r.out, r.out
    assert r.leftover == [], "executors %s outlived the program" % r.leftover


def resident_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def test_sixteen_idle_executors_stay_small(built):
    if os.environ.get("OMPSIM_SANITIZER_PRELOAD"):
        pytest.skip("sanitizer runtimes make every process large")
    exe = built("many_devices.c", translate="native-cc")
    why = backends.unavailable_reason("sim")
    if why:
        pytest.skip("backend sim unavailable: %s" % why)
    env = backends.environment("sim")
    env["OMPSIM_NUM_DEVICES"] = str(DEVICES)
    p = subprocess.Popen([str(exe), "hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    watchdog = threading.Timer(300, p.kill)  # a hung program fails the test instead of hanging it
    watchdog.start()
    try:
        line = p.stdout.readline()
        assert "devices=%d mismatches=0" % DEVICES in line, line + p.stderr.read()
        pids = executors_of(p.pid)
        assert len(pids) == DEVICES, pids
        # One executor per device, each without the host runtime's libLLVM.
        sizes = {pid: resident_kib(pid) for pid in pids}
        assert all(kib is not None and kib <= 16 * 1024 for kib in sizes.values()), sizes
        for pid in pids:
            with open("/proc/%d/maps" % pid) as f:
                assert "libLLVM" not in f.read(), "executor %d loaded libLLVM" % pid
    finally:
        out, err = p.communicate(input="\n", timeout=120)
        watchdog.cancel()
    assert p.returncode == 0, err
    assert ompsim_lines(err) == [], err
