"""scripts/setup says what it does as it goes: one line as each step starts (packages to
install with their names and count, configure, build, selfcheck), and the build's own
progress lines as they come, also through `ompsim matrix`, which used to hold it all back.

Packages cannot really be removed here, so the package step runs against a fake
`dpkg-query` and `apt-get` first on PATH, and the build step against a fake `cmake` that
stops half-way until the test has seen its first line (no timing involved)."""
import os
import select
import subprocess
import time

import pytest

from ompsim_base import paths, toolchain

SETUP = os.path.join(paths.ROOT, "scripts", "setup")
OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")


def fake_bin(tmp_path, **scripts):
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, body in scripts.items():
        f = folder / name.replace("_", "-")
        f.write_text("#!/bin/sh\n" + body)
        f.chmod(0o755)
    return folder


#: dpkg-query -W -f='${Status}' NAME: installed unless NAME is listed in $FAKE_MISSING.
DPKG_QUERY = 'for n in $FAKE_MISSING; do [ "$n" = "$3" ] && exit 1; done\nprintf "install ok installed"\n'


def test_package_step_names_and_counts_what_it_installs(tmp_path):
    packages = toolchain.packages()
    missing = [packages[0], packages[-1]]
    log = tmp_path / "apt.log"
    folder = fake_bin(tmp_path, dpkg_query=DPKG_QUERY, apt_get='echo "apt-get $*" >> "$FAKE_LOG"\n',
                      sudo='exec "$@"\n')
    env = dict(os.environ, PATH="%s:%s" % (folder, os.environ["PATH"]), FAKE_MISSING=" ".join(missing),
               FAKE_LOG=str(log))
    r = subprocess.run([SETUP, "--no-build"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines() == [
        "ompsim setup: [1/1] installing 2 of the %d packages of scripts/packages.txt and scripts/packages-dev.txt "
        "(apt-get): %s" % (len(packages), " ".join(missing))]
    assert log.read_text().splitlines() == [
        "apt-get update -q", "apt-get install -y -q --no-install-recommends %s" % " ".join(missing)]

    env["FAKE_MISSING"] = ""
    r = subprocess.run([SETUP, "--no-build"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    assert (r.returncode, r.stdout) == (
        0, "ompsim setup: [1/1] packages: all %d of scripts/packages.txt and scripts/packages-dev.txt are "
           "installed\n" % len(packages))
    assert len(log.read_text().splitlines()) == 2          # nothing installed the second time


def test_the_commands_set_up_installs_only_the_packages_they_need(tmp_path):
    # `ompsim matrix` on a fresh machine (scripts/setup --tools) leaves out what only the unit
    # tests, benchmarks and checks need: about half of the packages' install time.
    commands, everything = toolchain.packages(dev=False), toolchain.packages()
    missing = [commands[0], everything[-1]]
    assert everything[-1] not in commands
    log = tmp_path / "apt.log"
    folder = fake_bin(tmp_path, dpkg_query=DPKG_QUERY, apt_get='echo "apt-get $*" >> "$FAKE_LOG"\n',
                      sudo='exec "$@"\n')
    env = dict(os.environ, PATH="%s:%s" % (folder, os.environ["PATH"]), FAKE_MISSING=" ".join(missing),
               FAKE_LOG=str(log))
    r = subprocess.run([SETUP, "--no-build", "--tools"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines() == [
        "ompsim setup: [1/1] installing 1 of the %d packages of scripts/packages.txt (apt-get): %s"
        % (len(commands), commands[0])]
    assert log.read_text().splitlines()[1] == "apt-get install -y -q --no-install-recommends " + commands[0]


def read_until(proc, needle, seen, deadline):
    """Reads proc's stdout into `seen` (a list of lines) until a line holds `needle`."""
    buf = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 65536).decode()
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split("\n")
        seen.extend(lines)
        if any(needle in line for line in lines):
            return True
    seen.append(buf)
    return False


@pytest.mark.parametrize("command, builds", [
    ([SETUP], "building %s"),
    # The commands build only what they need: no unit tests (the ompsim-tools target).
    ([OMPSIM, "matrix", "--program", "no-such-program-anywhere"], "building what ompsim's commands need in %s"),
], ids=["setup", "matrix"])
def test_each_step_shows_as_it_starts_and_the_build_as_it_goes(tmp_path, command, builds):
    if not os.path.exists(os.path.join(paths.BUILD, "build.ninja")) or not os.path.exists(paths.RUNTIME):
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)
    flag = tmp_path / "go-on"
    # The fake build prints its first step, then waits for the test to have read it.
    folder = fake_bin(tmp_path, cmake='echo "fake cmake $*"\n'
                                      'echo "[1/2] Building CXX object fake.o"\n'
                                      'while [ ! -e "$FAKE_FLAG" ]; do sleep 0.1; done\n'
                                      'echo "[2/2] Linking CXX shared library fake.so"\n')
    env = dict(os.environ, PATH="%s:%s" % (folder, os.environ["PATH"]), FAKE_FLAG=str(flag),
               OMPSIM_BUILD_DIR=paths.BUILD)
    env.pop("OMPSIM_SETUP_ACTIVE", None)
    proc = subprocess.Popen(command + (["--out", str(tmp_path / "out")] if "matrix" in command else []),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = []
    try:
        deadline = time.monotonic() + 300
        got = read_until(proc, "[1/2] Building CXX object fake.o", seen, deadline)
        assert got, "\n".join(seen)
        # While the build is still going: the steps so far and its first line, nothing after.
        steps = [line for line in seen if line.startswith("ompsim setup: ")]
        matrix = "matrix" in command
        lists = "scripts/packages.txt" + ("" if matrix else " and scripts/packages-dev.txt")
        n = 3 if matrix else 4       # the matrix's set-up runs no selfcheck: its cells check more
        assert steps == ["ompsim setup: [1/%d] packages: all %d of %s are installed"
                         % (n, len(toolchain.packages(dev=not matrix)), lists),
                         "ompsim setup: [2/%d] configure: %s is configured already" % (n, paths.BUILD),
                         "ompsim setup: [3/%d] " % n + builds % paths.BUILD + " (ninja: one [done/total] line "
                         "per step; a few minutes the first time)"], seen
        target = " --target ompsim-tools" if "matrix" in command else ""
        assert "fake cmake --build %s%s" % (paths.BUILD, target) in seen, seen
        assert not any("[2/2]" in line for line in seen), seen
        flag.touch()
        rest, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = seen + rest.decode().splitlines()
    keys = ["[3/%d] building" % n, "[2/2] Linking"] + ([] if matrix else ["[4/4] selfcheck", "ompsim selfcheck: "]) \
        + ["ompsim setup: done"]
    at = [next((i for i, line in enumerate(lines) if key in line), None) for key in keys]
    assert None not in at and at == sorted(at), lines
    assert matrix != any("selfcheck" in line for line in lines), lines


@pytest.mark.parametrize("succeeds", [True, False], ids=["built", "fails"])
def test_a_tool_left_out_of_the_commands_build_is_built_at_its_first_use(tmp_path, monkeypatch, capsys, succeeds):
    # `ompsim inspect` on a checkout set up for the commands alone (no ompsim-inspect in
    # the ompsim-tools target): its first run builds the one target, with a line.
    build = tmp_path / "build"
    output = build / "bin" / "ompsim-inspect"
    body = ('echo "fake cmake"\nmkdir -p "$(dirname "$FAKE_OUTPUT")" && echo "$*" > "$FAKE_OUTPUT"\n' if succeeds
            else 'echo "ninja: error: unknown target"\nexit 1\n')
    folder = fake_bin(tmp_path, cmake=body)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    monkeypatch.setenv("FAKE_OUTPUT", str(output))
    monkeypatch.setattr(paths, "BUILD", str(build))
    monkeypatch.setattr(paths, "INSTALLED", False)
    set_up = []
    monkeypatch.setattr(paths, "ensure_built", lambda **kw: set_up.append(kw))
    assert paths.ensure_target("ompsim-inspect", str(output)) == succeeds
    err = capsys.readouterr().err
    assert set_up, "the commands' set-up comes first"
    assert "ompsim: building ompsim-inspect (its first use)\n" in err
    if succeeds:
        assert output.read_text() == "--build %s --target ompsim-inspect\n" % build
        assert "fake cmake" not in err  # the build's output shows only when it fails
        assert paths.ensure_target("ompsim-inspect", str(output)) and len(set_up) == 1  # once
    else:
        assert "ninja: error: unknown target\nompsim: building ompsim-inspect failed (cmake --build exited 1)" in err
