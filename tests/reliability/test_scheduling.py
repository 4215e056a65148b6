"""How ompsim schedules the threads that run target regions (docs/performance.md, "Concurrent
launches"): the short scheduler slice the runtime asks for libomp's hidden helper threads, and the
sim plugin's hand-over of its CPU to the executor's device thread on a busy machine."""
import contextlib
import json
import os
import subprocess
import sys

import pytest

from reliability_helpers import ompsim_lines, run

#: OMPSIM_HIDDEN_HELPER_SLICE_US's default, in nanoseconds as sched_getattr reports it.
DEFAULT_SLICE_NS = 100000

#: Sets a thread's custom slice and reads it back (x86_64 system call numbers; the kernel's
#: struct sched_attr, first version), in a process of its own.
SLICE_PROBE = r"""
import ctypes, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(48)
if libc.syscall(315, 0, buf, 48, 0) != 0:
    sys.exit("sched_getattr: errno %d" % ctypes.get_errno())
size, policy, flags, nice, prio, runtime, deadline, period = struct.unpack("IIQiIQQQ", buf.raw)
struct.pack_into("IIQiIQQQ", buf, 0, 48, policy, 0, nice, prio, SLICE_NS, deadline, period)
if libc.syscall(314, 0, buf, 0) != 0:
    sys.exit("sched_setattr: errno %d" % ctypes.get_errno())
libc.syscall(315, 0, buf, 48, 0)
print(struct.unpack("IIQiIQQQ", buf.raw)[5])
""".replace("SLICE_NS", str(DEFAULT_SLICE_NS))


@pytest.fixture(scope="module")
def custom_slices():
    """Skips unless this kernel (6.12 and later) keeps a thread's custom slice and lets us set it."""
    if os.uname().machine != "x86_64":
        pytest.skip("the slice probe uses x86_64 system call numbers")
    r = subprocess.run([sys.executable, "-c", SLICE_PROBE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0 or r.stdout.strip() != str(DEFAULT_SLICE_NS):
        pytest.skip("no per-thread scheduler slices here (kernel %s): %s" % (os.uname().release, r.stdout.strip()))


def slices(r):
    assert r.rc == 0 and ompsim_lines(r.err) == [], "exit %d\n%s\n%s" % (r.rc, r.out, r.err)
    line = [l for l in r.out.splitlines() if l.startswith("slice: ")]
    assert len(line) == 1, r.out
    got = dict(kv.split("=") for kv in line[0].split()[1:])
    got = {k: int(v) for k, v in got.items()}
    if got["initial"] <= 0:
        # Kernels before 6.12 report no slice for the normal policy (and ignore the request).
        pytest.skip("this kernel (%s) has no per-thread scheduler slices" % os.uname().release)
    return got


def test_hidden_helper_threads_get_a_short_slice_on_ours_host(custom_slices, built):
    # ours-host runs a region in the thread that launches it: the `target nowait` one on a
    # hidden helper thread, which the runtime gave the short slice before the region ran;
    # the initial thread, which runs the synchronous region, keeps the kernel's own.
    s = slices(run(built("scheduling.c", translate="native-cc"), "ours-host", ["slice"]))
    assert s["nowait"] == DEFAULT_SLICE_NS and s["target"] == s["initial"] != DEFAULT_SLICE_NS, s


@pytest.mark.parametrize("env,expect", [({"OMPSIM_HIDDEN_HELPER_SLICE_US": "250"}, 250000),
                                        ({"OMPSIM_HIDDEN_HELPER_SLICE_US": "0"}, None),
                                        ({"LIBOMP_USE_HIDDEN_HELPER_TASK": "0"}, None)],
                         ids=["slice-250us", "slice-off", "hidden-helpers-off"])
def test_the_slice_follows_the_settings(custom_slices, built, env, expect):
    # None: the thread keeps the kernel's slice (the request is off, or the nowait region
    # runs on the thread that waits in taskwait, as libomp does without hidden helper tasks).
    s = slices(run(built("scheduling.c", translate="native-cc"), "ours-host", ["slice"], env=env))
    assert s["nowait"] == (expect if expect is not None else s["initial"]), s


def test_stock_leaves_hidden_helper_threads_alone(custom_slices, built):
    # The reference: stock libomptarget does not touch the slice (so the one ours-host
    # shows is ompsim's doing, not libomp's).
    s = slices(run(built("scheduling.c", translate="native-cc"), "host-upstream", ["slice"]))
    assert s["nowait"] == s["initial"] == s["target"], s


def test_sim_requests_the_slice_for_the_launching_helper(custom_slices, built, tmp_path):
    # On sim a region runs in the executor, so the request shows in the trace: once, for
    # the hidden helper thread that launched the nowait region.
    trace = tmp_path / "t.jsonl"
    r = run(built("scheduling.c", translate="native-cc"), "sim", ["slice"],
            env={"OMPSIM_TRACE": "launch", "OMPSIM_TRACE_FILE": str(trace)})
    slices(r)
    events = [json.loads(l) for l in trace.read_text().splitlines()]
    helper = [e for e in events if e["event"] == "helper-slice"]
    assert len(helper) == 1 and helper[0]["slice_us"] == DEFAULT_SLICE_NS // 1000, helper
    assert helper[0]["result"] == "set", helper
    launches = [e for e in events if e["event"] == "launch" and "entry" not in e]
    assert helper[0]["tid"] != events[0]["pid"] and any(e["tid"] == helper[0]["tid"] for e in launches), events


@contextlib.contextmanager
def every_cpu_busy():
    """One spinning process per CPU this process may use and one more, for the duration (each
    says when it spins)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "print('spinning', flush=True)\nwhile True: pass"],
                             stdout=subprocess.PIPE, text=True) for _ in range(len(os.sched_getaffinity(0)) + 1)]
    try:
        for h in hogs:
            assert h.stdout.readline().strip() == "spinning"
        yield
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()


def test_handover_on_a_busy_machine_leaves_device_code_its_whole_cpu_mask(built):
    # With every CPU busy the sim plugin wakes the device thread on its own CPU (narrowing
    # that thread's affinity for the wake-up); the kernel must run with the executor's whole
    # mask all the same, and every region must run once.
    exe = built("scheduling.c", translate="native-cc")
    with every_cpu_busy():
        r = run(exe, "sim", ["handover", 300])
    assert r.rc == 0 and ompsim_lines(r.err) == [], "exit %d\n%s\n%s" % (r.rc, r.out, r.err)
    assert "launches=600" in r.out and "narrowed=0 wrong=0" in r.out, r.out
    assert r.leftover == []
