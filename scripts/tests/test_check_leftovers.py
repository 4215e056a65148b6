"""scripts/check-leftovers, which scripts/test wraps its run in: a file a run's process
leaves in /dev/shm, /tmp or the run's own temporary folder fails it, by name."""
import os
import subprocess

from ompsim_base import leftovers, paths

CHECK = os.path.join(paths.ROOT, "scripts", "check-leftovers")


def check(*args, places=None):
    """Runs the script; `places` (a folder of the test's own) stands for /dev/shm and /tmp.
    A file planted in /dev/shm itself is not the test's alone: another worker's harness
    removes the registrations of exited processes made while its killed program ran
    (`forget_registrations_since`), and then the check had nothing to name."""
    env = dict(os.environ)
    if places:
        env[leftovers.PLACES_VARIABLE] = str(places)
    return subprocess.run([CHECK, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env)


def registration(place, pid):
    return os.path.join(str(place), "__KMP_REGISTERED_LIB_%d_%d" % (pid, os.getuid()))


def exited_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_planted_registration_file_fails_the_run_and_is_named(tmp_path):
    run_tmp = tmp_path / "run-tmp"
    run_tmp.mkdir()
    shm = tmp_path / "shm"
    shm.mkdir()
    state = tmp_path / "state.json"
    assert check("record", state, run_tmp, places=shm).returncode == 0
    planted = registration(shm, exited_pid())
    with open(planted, "w") as f:
        f.write("0x7f0000000000-cafe1234-libomp.so")
    r = check("check", state)  # the places come from the record
    assert r.returncode == 1, r.stderr
    assert "scripts/test: the run left %s (libomp's registration of process" % planted in r.stderr
    os.unlink(planted)
    r = check("check", state)
    assert r.returncode == 0 and planted not in r.stderr, r.stderr


def test_the_default_places_are_dev_shm_and_tmp(tmp_path):
    env = dict(os.environ)
    env.pop(leftovers.PLACES_VARIABLE, None)
    state = tmp_path / "state.json"
    assert subprocess.run([CHECK, "record", str(state)], env=env).returncode == 0
    assert sorted(leftovers.load(state)["places"]) == ["/dev/shm", "/tmp"]


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
    assert check("record", state, places=tmp_path).returncode == 0
    mine = registration(tmp_path, os.getpid())
    open(mine, "w").close()
    r = check("check", state)
    assert r.returncode == 0 and mine not in r.stderr, r.stderr


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
    assert check("record", state, places=tmp_path).returncode == 0
    image = tmp_path / ("tmpfile_%s" % os.urandom(3).hex())
    other = tmp_path / ("tmpfile_%s" % os.urandom(3).hex())
    image.write_bytes(b"\x7fELF\x02\x01\x01")
    other.write_text("not an image")
    r = check("check", state)
    assert "scripts/test: removed 1 device image that" in r.stderr and "tmpfile_XXXXXX" in r.stderr
    assert not image.exists()
    assert other.exists()  # not stock's: nothing says whose it is


def test_forget_since_removes_only_exited_processes_registrations_made_since(tmp_path):
    import time
    older = registration(tmp_path, exited_pid())
    open(older, "w").close()
    # The check allows ctime's coarse clock a second: files made since `since - 1` count.
    since = time.time() + 1.3
    time.sleep(0.6)
    dead = registration(tmp_path, exited_pid())
    mine = registration(tmp_path, os.getpid())
    for f in (dead, mine):
        open(f, "w").close()
    r = check("forget-since", since, "the suites", places=tmp_path)
    assert r.returncode == 0
    assert not os.path.exists(dead)
    assert os.path.exists(mine)  # alive
    assert os.path.exists(older)  # made before
    assert "the suites: removed 1 libomp registration file of" in r.stderr, r.stderr
    assert check("forget-since", "soon", "x").returncode == 2
