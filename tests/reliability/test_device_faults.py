"""Device faults and hangs on backend sim: one line naming the kernel, the host survives, nothing leaks."""
import os
import re
import signal
import time


from reliability_helpers import KERNEL, executors_of, ompsim_lines, run, start, wait_for_executor, wait_gone

# tests/reliability/programs/device_faults.c: argv[1] picks the fault inside one target region.
PROGRAM = "device_faults.c"


def assert_next_run_clean(exe):
    r = run(exe, "sim", ["ok"])
    assert r.rc == 0 and "r=42" in r.out, r.err
    assert ompsim_lines(r.err) == [], r.err
    assert r.leftover == []


def test_untranslated_function_pointer(built):
    exe = built(PROGRAM)
    line = run(exe, "sim", ["untranslated"]).single_error()
    assert re.fullmatch(r"ompsim: device 0: kernel %s called untranslated host function pointer 0x[0-9a-f]+ "
                        r"\(host symbol 'plain' in \S*device_faults\.exe\); note: 'plain' \(defined at "
                        r"\S*device_faults\.c:5\) is not declare target indirect, so the device cannot call "
                        r"it through a host pointer: add '#pragma omp declare target to\(plain\) indirect'"
                        % KERNEL, line), line
    assert_next_run_clean(exe)


def test_call_through_null(built):
    exe = built(PROGRAM)
    line = run(exe, "sim", ["null"]).single_error()
    assert re.fullmatch(r"ompsim: device 0: kernel %s called a null function pointer \(0x0\)" % KERNEL, line), line
    assert_next_run_clean(exe)


def test_wild_write(built):
    exe = built(PROGRAM)
    line = run(exe, "sim", ["wild"]).single_error()
    # The faulting instruction is symbolized in the kernel.
    assert re.fullmatch(r"ompsim: device 0: kernel (%s) wrote unmapped address 0x1234560 \(neither host nor "
                        r"device memory\) from dev:\1\+0x[0-9a-f]+ \(0x[0-9a-f]+\); note: the pointer holds a "
                        r"wild value \(uninitialized, or computed out of bounds\)" % KERNEL, line), line
    assert_next_run_clean(exe)


def test_stack_overflow_is_named_and_symbolized(built):
    exe = built(PROGRAM)
    line = run(exe, "sim", ["stack"]).single_error()
    # The fault lies just below the device thread's stack; the recursing code is
    # named even though only debug info covers it (clang made a copy of deep()).
    assert re.fullmatch(r"ompsim: device 0: stack overflow in kernel %s: segmentation fault \(SIGSEGV\) at "
                        r"address 0x[0-9a-f]+, (\d+ bytes below|at the bottom of) the \d+ KiB stack of the device "
                        r"thread, instruction at dev:deep\+0x[0-9a-f]+ \(0x[0-9a-f]+\)" % KERNEL, line), line
    assert_next_run_clean(exe)


def test_abort_on_device(built):
    exe = built(PROGRAM)
    r = run(exe, "sim", ["abort"])
    line = r.single_error()
    assert re.fullmatch(r"ompsim: device 0: executor \(pid \d+\) was killed by signal 6 \(SIGABRT\) during "
                        r"kernel %s" % KERNEL, line), line
    assert_next_run_clean(exe)


def test_infinite_loop_times_out(built):
    exe = built(PROGRAM)
    line = run(exe, "sim", ["loop"], env={"OMPSIM_KERNEL_TIMEOUT": "2"}).single_error()
    assert re.fullmatch(r"ompsim: device 0: kernel %s timed out after 2s \(OMPSIM_KERNEL_TIMEOUT\)" % KERNEL,
                        line), line
    assert_next_run_clean(exe)


def test_executor_killed_from_outside_mid_kernel(built):
    exe = built(PROGRAM)
    p = start(exe, "sim", ["loop"])
    wait_for_executor(p.pid)
    time.sleep(0.5)  # let the kernel start; a kill before the launch is reported the same way
    victim = None
    deadline = time.time() + 30
    while victim is None and time.time() < deadline:
        # The executor seen first may be gone by now (slow sanitizer builds):
        # kill the one that is there.
        for pid in executors_of(p.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                victim = pid
                break
            except ProcessLookupError:
                pass
        else:
            time.sleep(0.05)
    assert victim is not None, "no executor to kill"
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0, err  # a lost device fails the target region: abort, as stock
    lines = ompsim_lines(err)
    assert len(lines) == 1, err
    assert re.fullmatch(r"ompsim: device 0: executor \(pid %d\) was killed by signal 9 \(SIGKILL\)( during .*)?"
                        % victim, lines[0]), lines[0]
    assert executors_of(p.pid) == []
    assert_next_run_clean(exe)


def test_host_killed_takes_the_executor_along(built):
    exe = built(PROGRAM)
    p = start(exe, "sim", ["loop"])
    victim = wait_for_executor(p.pid)
    time.sleep(0.5)
    p.kill()
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    assert wait_gone(victim, 5), "executor %d survived SIGKILL of its host by 5 s" % victim
    assert_next_run_clean(exe)


def test_exit_in_a_kernel_is_named_with_its_status(built):
    exe = built(PROGRAM)
    r = run(exe, "sim", ["exit"])
    line = r.single_error()
    assert r.rc == 3, "the host exits with the status device code gave exit(), as stock does"
    assert re.fullmatch(r"ompsim: device 0: kernel %s called exit\(3\)( from dev:\S+)?" % KERNEL, line), line
    assert "SIGABRT" not in line
    assert_next_run_clean(exe)


def test_exit_in_teams_distribute_parallel_for_is_named_with_its_status(built):
    exe = built(PROGRAM)
    r = run(exe, "sim", ["parallel-exit"])
    line = r.single_error()
    assert r.rc == 3
    assert re.fullmatch(r"ompsim: device 0: kernel %s called exit\(3\)( from dev:\S+)?" % KERNEL, line), line
    assert "terminate called" not in r.err
    assert_next_run_clean(exe)
