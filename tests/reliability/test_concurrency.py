"""Concurrency on ompsim's backends: host threads launching at once, several devices,
translation from every device thread, target nowait regions. The programs check
their own results (non-zero exit on any mismatch)."""
import re

import pytest

from reliability_helpers import ompsim_lines, run

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
