"""Concurrency on ompsim's backends: host threads launching at once, several devices,
translation from every device thread, target nowait regions. The programs check
their own results (non-zero exit on any mismatch)."""
import concurrent.futures
import os
import re

import pytest

from ompsim_base import paths
from reliability_helpers import compile_program, ompsim_lines, run

BACKENDS = ["sim", "ours-host"]


def check(r, pattern):
    assert r.rc == 0, "exit %d\n%s\n%s" % (r.rc, r.out, r.err)
    assert ompsim_lines(r.err) == [], r.err
    # Under scripts/sanitizers: an executor's report does not change the
    # program's exit status (the host never sees the executor's), only stderr.
    assert not re.search(r"^(WARNING|ERROR): (ThreadSanitizer|AddressSanitizer)", r.err, re.M), r.err
    assert r.leftover == [], "executors %s outlived the program" % r.leftover
    m = re.search(pattern, r.out)
    assert m, r.out
    return m


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_threads_launch_on_one_device(built, backend):
    exe = built("concurrent_launch.c", translate="native-cc")
    check(run(exe, backend, ["one"], env={"OMP_MAX_ACTIVE_LEVELS": "2"}), r"devices=\d+ threads=4 mismatches=0")


def test_host_threads_launch_on_two_devices(built):
    exe = built("concurrent_launch.c", translate="native-cc")
    check(run(exe, "sim", ["all"], env={"OMPSIM_NUM_DEVICES": "2"}), r"devices=2 threads=4 mismatches=0")


@pytest.mark.parametrize("backend", BACKENDS)
def test_translate_from_every_team_and_thread(built, backend):
    exe = built("translate_every_thread.c", translate="native-cc")
    m = check(run(exe, backend), r"threads=(\d+) good=(\d+)")
    assert int(m.group(1)) > 1 and m.group(1) == m.group(2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_target_nowait_regions(built, backend):
    exe = built("nowait_regions.c", translate="native-cc")
    check(run(exe, backend), r"chains=8 mismatches=0")


@pytest.mark.parametrize("backend", BACKENDS)
def test_independent_nowait_kernels_run_at_once(built, backend):
    # Each kernel waits in device memory until the other has started (bounded:
    # it gives up after 30 s and the program says so): the start tickets come
    # before both end tickets only when the two ran at the same time.
    exe = built("overlapping_kernels.c", translate="native-cc")
    r = run(exe, backend, ["overlap"])
    m = check(r, r"overlap: starts=(\d),(\d) ends=(\d),(\d) gave_up=(\d) overlapped=(\d)")
    assert sorted(m.group(1, 2)) == ["0", "1"] and sorted(m.group(3, 4)) == ["2", "3"], r.out
    assert m.group(5, 6) == ("0", "1"), r.out


@pytest.mark.parametrize("backend", BACKENDS)
def test_depend_order_kept_under_eight_threads(built, backend):
    # 8 host threads, each a depend(inout) chain of nowait regions, nowait
    # updates and host tasks on its own state; every step checks it runs
    # after the one before it.
    # Under ThreadSanitizer the chains hold nowait regions only (see the
    # program: TSan cannot see libomp order copies made on different threads).
    under_tsan = "tsan" in os.environ.get("OMPSIM_SANITIZER_PRELOAD", "")
    exe = built("overlapping_kernels.c", translate="native-cc")
    check(run(exe, backend, ["order-kernels" if under_tsan else "order"]),
          r"order: threads=8 steps=64 copies=%d out_of_order=0 wrong_end=0" % (0 if under_tsan else 1))


def test_independent_nowait_kernels_run_at_once_on_two_sim_devices(built):
    # The same with the second device present: launches of one device still
    # overlap while another device exists (its executor is idle).
    exe = built("overlapping_kernels.c", translate="native-cc")
    check(run(exe, "sim", ["overlap"], env={"OMPSIM_NUM_DEVICES": "2"}), r"overlapped=1")


@pytest.mark.parametrize("backend", BACKENDS)
def test_copies_go_on_while_a_kernel_runs(built, backend):
    # The kernel says it started and waits (bounded) for a flag; another task
    # reads the start with `target update from` and sends the flag with
    # `target update to` while the kernel still runs.
    exe = built("overlapping_kernels.c", translate="native-cc")
    check(run(exe, backend, ["transfer"]), r"transfer: seen_start=1 kernel_gave_up=0 copies_while_running=1")


def test_fault_in_one_of_two_running_kernels(built):
    # While one kernel waits for the other, the other writes to address 16:
    # the program ends with the one line of a device fault (not after the
    # waiting kernel's bound) and no executor is left.
    # Either host thread may notice the death first; the line names the
    # kernel that faulted either way (five runs, so a launch naming its own
    # kernel instead shows).
    exe = built("overlapping_kernels.c", translate="native-cc")
    for _ in range(5):
        r = run(exe, "sim", ["fault"])
        line = r.single_error()
        assert re.match(r"ompsim: device 0: kernel (\S+) wrote a null pointer \(address 0x10\) from "
                        r"dev:\1\+0x[0-9a-f]+ \(0x[0-9a-f]+\); note: a pointer the kernel dereferences is null "
                        r"on the device", line), line
        assert "not reached" not in r.out


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpu_abi_kernels_in_nowait_tasks_fork_their_teams_safely(built, backend):
    # flang's kernels fork their teams through ompsim's device runtime. On ours-host a
    # `target nowait` task runs them on a libomp hidden helper thread, and teams forked there
    # stopped now and then on libomp's task-team assertion (kmp_tasking.cpp(4368), about one
    # run in twenty); the runtime forks them from a root thread instead. Thirty runs.
    exe = built("nowait_teams.f90", translate="native-cc")
    for _ in range(30 if backend == "ours-host" else 3):
        check(run(exe, backend), r"wrong=0\b")


CONFORMANCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conformance", "programs")


@pytest.mark.parametrize("arch", ["sm_90", "gfx90a"])
@pytest.mark.parametrize("program,runs", [("first_launch_from_many_threads.c", 30), ("nowait_regions.c", 60)])
def test_gpu_kernels_launched_at_once_from_many_threads_run_once_each(tmp_path, arch, program, runs):
    # GPU images' kernels launched at once from several host threads (their first
    # launches meeting at a barrier; nowait tasks with depend on hidden helper
    # threads). The plugin learned a kernel's environment at its first launch; a
    # second thread launching it before that read ended ran it on the default grid
    # (3200 blocks for nvptx64, 440 for amdgcn), so a target region ran thousands
    # of times, now and then (1 run in 6 of the first program, 1 in 30 of the
    # second). Two programs at a time, as on a busy machine.
    if not os.path.exists(paths.VGPU_RUNTIME):
        pytest.skip("the GPU device runtime for the virtual GPU is not built here (%s)" % paths.VGPU_RUNTIME)
    if os.environ.get("OMPSIM_SANITIZER_PRELOAD"):
        # Under a sanitizer each run is checked for the bug itself (ThreadSanitizer for a
        # race over the launches' threads and the virtual GPU's device threads and
        # fibers, ASan for a bad access), and runs are slower: a third of them.
        runs //= 3
    exe = compile_program(os.path.join(CONFORMANCE, program), tmp_path, "native-cc", ["--gpu=" + arch])
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: run(exe, "sim"), range(runs)))
    failed = [(i, r) for i, r in enumerate(results) if r.rc != 0 or "PASS" not in r.out]
    assert not failed, "%d of %d runs failed; run %d:\n%s\n%s" % (
        len(failed), runs, failed[0][0], failed[0][1].out, failed[0][1].err)
    for r in results:
        check(r, r"PASS")
