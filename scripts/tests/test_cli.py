"""The ompsim command line behaves like a Unix tool: closed pipes, help texts with an
example, one line for a usage error."""
import os
import re
import select
import subprocess

import pytest

from ompsim_base import paths
from ompsim_cli import main as cli_main

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")


def ompsim(*args, **kw):
    return subprocess.run([OMPSIM, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120, **kw)


def test_a_program_run_through_ompsim_dies_on_a_closed_pipe():
    # Python ignores SIGPIPE, and exec keeps an ignored signal ignored: the program
    # would then never learn that `head` has gone and write forever.
    r = subprocess.run("'%s' run --backend ours-host -- sh -c 'while :; do echo x; done 2>/dev/null' | head -n 1"
                       % OMPSIM, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    assert (r.returncode, r.stdout) == (0, "x\n"), r.stderr


@pytest.mark.parametrize("argv", [["trace", "show", "{big}"], ["trace", "diff", "{big}", "{other}"]])
def test_trace_commands_survive_a_closed_pipe(tmp_path, argv):
    lines = ['{"cat":"launch","event":"launch","device":0,"kernel":"k%d","seq":%d}' % (i, i) for i in range(50000)]
    (tmp_path / "big.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "other.jsonl").write_text("\n".join(l.replace('"k', '"q') for l in lines) + "\n")
    cmd = " ".join("'%s'" % a.format(big=tmp_path / "big.jsonl", other=tmp_path / "other.jsonl") for a in argv)
    r = subprocess.run("'%s' %s | head -n 2" % (OMPSIM, cmd), shell=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    assert len(r.stdout.splitlines()) == 2
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


@pytest.mark.parametrize("sub", [[]] + [[c] for c in cli_main.COMMANDS] + [["trace", "show"], ["trace", "diff"],
                                                                   ["matrix", "diff"], ["matrix", "merge"]])
def test_every_help_has_an_example_and_no_internal_words(sub):
    r = ompsim(*sub, "--help")
    assert r.returncode == 0, r.stderr
    assert re.search(r"(?m)^\s*example: ompsim ", r.stdout), r.stdout
    assert not re.search(r"\b(issue|task) ?\d+|\bissue\b", r.stdout, re.I), r.stdout


def test_cc_refuses_a_bitcode_image_for_fortran_in_one_line(tmp_path):
    (tmp_path / "p.f90").write_text("program p\nend program p\n")
    r = ompsim("cc", "--image=ir", "p.f90", "-o", "p", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "ompsim: cc: --image=ir: flang-22 cannot embed a bitcode device image (it has no -fopenmp-target-jit); "
        "build Fortran with --image=elf (the default), which runs on sim, ours-host and host-upstream"]


def test_run_devices_is_refused_where_it_cannot_apply():
    r = ompsim("run", "--backend", "host-upstream", "--devices", "2", "--", "true")
    assert r.returncode == 2
    assert r.stderr == "ompsim: run: --devices applies to ompsim's backends (ours-host, sim, sim-amdgcn, " \
                       "sim-ir, sim-nvptx), not to host-upstream\n"
    r = ompsim("run", "--backend", "sim", "--devices", "0", "--", "true")
    assert (r.returncode, r.stderr) == (2, "ompsim: run: --devices=0: expected a number of devices >= 1\n")


@pytest.mark.parametrize("backend", ["sim", "ours-host"])
def test_run_devices_sets_the_device_count_of_ompsim_backends(backend):
    r = ompsim("run", "--backend", backend, "--devices", "3", "--", "sh", "-c", "echo $OMPSIM_NUM_DEVICES")
    assert (r.returncode, r.stdout) == (0, "3\n"), r.stderr


def _processes_of_run(sid, folder):
    """Live processes in session `sid`, or started in or from `folder` (the programs a
    matrix runs get sessions of their own)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmdline = f.read().decode(errors="replace")
            cwd = os.readlink("/proc/%s/cwd" % d)
        except OSError:
            continue
        # fields[0] is the state, [3] the session id; zombies are already gone.
        if fields[0] != "Z" and (int(fields[3]) == sid or str(folder) in cmdline or cwd.startswith(str(folder))):
            out.append((int(d), cmdline.replace("\0", " ")))
    return out


@pytest.mark.e2e
def test_ctrl_c_ends_a_matrix_run_with_a_partial_report_and_no_process_left(tmp_path):
    import signal
    import time
    out = tmp_path / "out"
    # Its own session, so the test can send what a terminal sends on Ctrl-C: SIGINT
    # to the whole foreground process group.
    # SIGINT at its default in the run, as in a terminal: a job started in the
    # background by a non-interactive shell (a CI runner) inherits it ignored.
    # The compilers it interrupts leave their temporary files: in the test's own folder.
    (tmp_path / "tmp").mkdir()
    p = subprocess.Popen([OMPSIM, "matrix", "--no-build", "--out", str(out), "-j", "2",
                          "--backend", "sim,host-upstream"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                         env=dict(os.environ, TMPDIR=str(tmp_path / "tmp")))
    # Interrupt once the first program has finished (its progress line, piped), with
    # other cells in flight: however loaded the machine, the report then holds cells.
    seen, deadline = b"", time.monotonic() + 300
    while time.monotonic() < deadline and not re.search(rb"(?m)^\[ *1/\d+ ", seen):
        ready, _, _ = select.select([p.stdout], [], [], 1)
        chunk = os.read(p.stdout.fileno(), 65536) if ready else b""
        if ready and not chunk:
            break
        seen += chunk
    assert re.search(rb"(?m)^\[ *1/\d+ ", seen), seen.decode()
    os.killpg(p.pid, signal.SIGINT)
    rest, _ = p.communicate(timeout=300)
    output = (seen + rest).decode()
    assert p.returncode == 130, output[-3000:]
    assert "ompsim matrix: interrupted: the reports hold the" in output, output[-3000:]
    for name in ("results.json", "junit.xml", "report.html"):
        assert (out / name).exists(), name
    time.sleep(1)
    assert _processes_of_run(p.pid, out) == []


def test_cc_inside_setup_does_not_run_setup_again(tmp_path):
    # scripts/setup ends with a selfcheck that compiles through `ompsim cc`, and
    # `ompsim cc` runs scripts/setup when the build lacks a file: a build that
    # still lacks it after setup (a build folder without the pass plugin) once
    # made the two start each other without end.
    src = tmp_path / "p.c"
    src.write_text("int main(void) { return 0; }\n")
    empty = tmp_path / "build"
    empty.mkdir()
    env = dict(os.environ, OMPSIM_BUILD_DIR=str(empty), OMPSIM_SETUP_ACTIVE="1")
    r = ompsim("cc", src, "-o", tmp_path / "p", env=env)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "ompsim: scripts/setup has just built %s and it still lacks what this command needs; "
        "not building again from inside scripts/setup (check OMPSIM_BUILD_DIR)" % empty]
