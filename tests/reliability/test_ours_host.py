"""ours-host runs device code in the host process: what it must still get right."""
import re

from reliability_helpers import ompsim_lines, run

PROGRAM = "device_faults.c"


def test_exit_in_teams_distribute_parallel_for_exits_like_stock(built):
    """exit() on a worker thread inside a kernel: the exit handlers must not wait
    for the launching thread (which holds the device's mapping table)."""
    exe = built(PROGRAM)
    upstream = run(exe, "host-upstream", ["parallel-exit"])
    r = run(exe, "ours-host", ["parallel-exit"])  # fails the test if it hangs
    assert r.rc == 3 == upstream.rc, (r.rc, upstream.rc, r.err)
    assert "sum=" not in r.out


def test_exit_in_a_kernel_exits_like_stock(built):
    r = run(built(PROGRAM), "ours-host", ["exit"])
    assert r.rc == 3, r.err


def test_kernel_timeout_is_said_to_apply_to_sim_only(built):
    r = run(built(PROGRAM), "ours-host", ["ok"], env={"OMPSIM_KERNEL_TIMEOUT": "2"})
    assert r.rc == 0 and "r=42" in r.out, r.err
    assert ompsim_lines(r.err) == ["ompsim: OMPSIM_KERNEL_TIMEOUT=2 applies to the sim backend only; the host "
                                   "plugin runs kernels in-process without a time limit"], r.err


def test_no_timeout_note_without_the_variable(built):
    r = run(built(PROGRAM), "ours-host", ["ok"])
    assert r.rc == 0 and ompsim_lines(r.err) == [], r.err
