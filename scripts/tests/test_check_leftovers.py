"""scripts/check-leftovers, which scripts/test wraps its run in: a file a run's process
leaves in /dev/shm, /tmp or the run's own temporary folder fails it, by name."""
import os
import subprocess

from ompsim_base import paths

CHECK = os.path.join(paths.ROOT, "scripts", "check-leftovers")


def check(*args):
    return subprocess.run([CHECK, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def exited_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_planted_registration_file_fails_the_run_and_is_named(tmp_path):
    run_tmp = tmp_path / "run-tmp"
    run_tmp.mkdir()
    state = tmp_path / "state.json"
    assert check("record", state, run_tmp).returncode == 0
    planted = "/dev/shm/__KMP_REGISTERED_LIB_%d_%d" % (exited_pid(), os.getuid())
    try:
        with open(planted, "w") as f:
            f.write("0x7f0000000000-cafe1234-libomp.so")
        r = check("check", state)
        assert r.returncode == 1, r.stderr
        assert "scripts/test: the run left %s (libomp's registration of process" % planted in r.stderr
    finally:
        os.unlink(planted)
    # Gone again: the file is no longer named (other processes of a parallel run may
    # leave their own meanwhile, so the status is not asserted).
    assert planted not in check("check", state).stderr


def test_what_stays_in_the_runs_temporary_folder_is_named_but_not_pytests_own(tmp_path):
    run_tmp = tmp_path / "run-tmp"
    run_tmp.mkdir()
    state = tmp_path / "state.json"
    assert check("record", state, run_tmp).returncode == 0
    (run_tmp / "pytest-of-someone").mkdir()
    (run_tmp / "prog-5d1e2f.o").write_text("")
    r = check("check", state)
    assert r.returncode == 1
    assert "the run left %s (left in the run's temporary folder)" % (run_tmp / "prog-5d1e2f.o") in r.stderr
    assert "pytest-of-someone" not in r.stderr


def test_a_live_processs_registration_is_not_a_leftover(tmp_path):
    state = tmp_path / "state.json"
    assert check("record", state).returncode == 0
    mine = "/dev/shm/__KMP_REGISTERED_LIB_%d_%d" % (os.getpid(), os.getuid())
    made = not os.path.exists(mine)
    if made:
        open(mine, "w").close()
    try:
        assert mine not in check("check", state).stderr
    finally:
        if made:
            os.unlink(mine)


def test_usage_errors_exit_2():
    r = check("inspect")
    assert r.returncode == 2 and "Usage:" in r.stderr


def test_scripts_test_wraps_its_whole_run_in_the_check():
    text = open(os.path.join(paths.ROOT, "scripts", "test")).read()
    record = text.index("scripts/check-leftovers\" record")
    assert record < text.index("ctest --test-dir")
    assert text.index("scripts/check-leftovers\" check") > text.index("scripts/test-suites")


def test_stock_host_plugin_images_are_removed_with_a_line(tmp_path):
    state = tmp_path / "state.json"
    assert check("record", state).returncode == 0
    image = "/tmp/tmpfile_%s" % os.urandom(3).hex()
    other = "/tmp/tmpfile_%s" % os.urandom(3).hex()
    with open(image, "wb") as f:
        f.write(b"\x7fELF\x02\x01\x01")
    with open(other, "w") as f:
        f.write("not an image")
    try:
        r = check("check", state)
        assert "scripts/test: removed" in r.stderr and "tmpfile_XXXXXX" in r.stderr
        assert not os.path.exists(image)
        assert os.path.exists(other)  # not stock's: nothing says whose it is
    finally:
        for f in (image, other):
            if os.path.exists(f):
                os.unlink(f)


def test_forget_since_removes_only_exited_processes_registrations_made_since(tmp_path):
    import time
    since = time.time()
    dead = "/dev/shm/__KMP_REGISTERED_LIB_%d_%d" % (exited_pid(), os.getuid())
    mine = "/dev/shm/__KMP_REGISTERED_LIB_%d_%d" % (os.getpid(), os.getuid())
    made_mine = not os.path.exists(mine)
    for f in ([dead, mine] if made_mine else [dead]):
        open(f, "w").close()
    try:
        r = check("forget-since", since, "the suites")
        assert r.returncode == 0
        assert not os.path.exists(dead)
        assert os.path.exists(mine)  # alive
        assert "the suites: removed" in r.stderr and "libomp registration file" in r.stderr
        assert check("forget-since", "soon", "x").returncode == 2
    finally:
        for f in (dead, mine if made_mine else None):
            if f and os.path.exists(f):
                os.unlink(f)
