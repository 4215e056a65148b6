"""Helpers shared by the reliability tests: compile, run on a backend, watch executors."""
import os
import re
import signal
import subprocess
import time

import pytest

from ompsim_base import backends, paths

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")


def executors_of(pid):
    """Pids of live ompsim-device processes started for host process `pid`.

    The executor's command line ends in `--parent <host pid>`, so this never
    counts executors of other programs running on the machine. Zombies (an
    executor that is gone but not yet reaped) are not counted.
    """
    r = subprocess.run(["pgrep", "-f", "ompsim-device .*--parent %d$" % pid],
                       stdout=subprocess.PIPE, text=True)
    alive = []
    for p in (int(x) for x in r.stdout.split()):
        try:
            with open("/proc/%d/stat" % p) as f:
                if f.read().rsplit(")", 1)[-1].split()[0] != "Z":
                    alive.append(p)
        except OSError:
            pass
    return alive


def ompsim_lines(text):
    """The `ompsim: ...` diagnostic lines of a program's stderr."""
    return [l for l in text.splitlines() if l.startswith("ompsim: ")]


def _as_a_shell_starts_it():
    # A shell runs a foreground program with SIGINT and SIGQUIT at their
    # defaults; a test session started in the background (`pytest &`)
    # ignores them, and a child would inherit that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def start(exe, backend, args=(), env=None, cwd=None, new_session=False):
    """Starts `exe` on `backend` as a shell starts a foreground program;
    new_session puts it in a process group of its own."""
    why = backends.unavailable_reason(backend)
    if why:
        pytest.skip("backend %s unavailable: %s" % (backend, why))
    e = backends.environment(backend)
    e.update(env or {})
    return subprocess.Popen([str(exe), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e, cwd=cwd,
                            start_new_session=new_session, preexec_fn=_as_a_shell_starts_it)


class Run:
    """A finished program: its status, output, and whether executors outlived it."""

    def __init__(self, proc, out, err, leftover):
        self.rc, self.out, self.err, self.leftover = proc.returncode, out, err, leftover
        self.pid = proc.pid

    def single_error(self):
        """Asserts the failure contract and returns the one `ompsim:` line.

        Non-zero exit (not a signal, except the abort() stock ends a failed
        target construct with, after its fatal line), exactly one diagnostic
        line, no executor left behind.
        """
        stock_abort = self.rc == -signal.SIGABRT and "omptarget fatal error" in self.err
        assert self.rc > 0 or stock_abort, (
            "expected a non-zero exit, got %d (negative: killed by signal %s)\n%s" % (
                self.rc, -self.rc if self.rc < 0 else "-", self.err))
        lines = ompsim_lines(self.err)
        assert len(lines) == 1, "expected exactly one ompsim: line, got %d:\n%s" % (len(lines), self.err)
        assert self.leftover == [], "executor(s) %s outlived host %d" % (self.leftover, self.pid)
        return lines[0]


def run(exe, backend, args=(), env=None, timeout=120, cwd=None):
    """Runs `exe` on `backend` to completion and records leftover executors."""
    p = start(exe, backend, args, env, cwd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail("program hung for %ss:\n%s" % (timeout, err))
    # An executor may take a moment to notice its host is gone.
    deadline = time.time() + 5
    left = executors_of(p.pid)
    while left and time.time() < deadline:
        time.sleep(0.05)
        left = executors_of(p.pid)
    return Run(p, out, err, left)


def wait_for_executor(pid, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        found = executors_of(pid)
        if found:
            return found[0]
        time.sleep(0.05)
    pytest.fail("no executor appeared for host pid %d" % pid)


def wait_gone(pid, seconds):
    """True once `pid` no longer exists (or is a zombie) within `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def compile_program(src, out_dir, translate="native", extra=()):
    """Builds an offload program; returns the executable.

    translate: "native" (plain clang-22), "native-cc" (`ompsim cc --translate=native`: no
    rewrite, but the device runtime's translate API is linked) or "pass"."""
    exe = os.path.join(str(out_dir), os.path.splitext(os.path.basename(src))[0] + ".exe")
    if translate == "native-cc":
        translate = "native"
        cmd = [os.path.join(paths.ROOT, "scripts", "ompsim"), "cc", "--translate=native", "-O1", "-g"]
    elif translate == "native":
        cmd = [paths.tool("clang"), "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1", "-g"]
    else:
        cmd = [os.path.join(paths.ROOT, "scripts", "ompsim"), "cc", "--translate=" + translate, "-O1", "-g"]
        if translate == "pass" and not os.path.exists(paths.PASS_PLUGIN):
            pytest.skip("pass plugin not built (%s)" % paths.PASS_PLUGIN)
    cmd += [src, "-o", exe, *extra]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(out_dir),
                       timeout=300)
    assert r.returncode == 0, "compile failed: %s\n%s" % (" ".join(cmd), r.stdout)
    return exe


KERNEL = r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_main_l\d+"


def build_fake(d, source):
    """Builds programs/fake_program.c and a real clang-22 device image of programs/`source` in `d`.

    Returns (fake program, device image, aarch64 bitcode, kernel, add1 global,
    mul2 global); `source` defines indirect add1 and mul2 and one region.
    """
    stem = os.path.splitext(source)[0]
    src = os.path.join(PROGRAMS, source)
    subprocess.run([paths.tool("clang"), "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1",
                    "-save-temps", src, "-o", stem], cwd=d, check=True, capture_output=True)
    image = d / (stem + ".x86_64..img")
    assert image.exists(), "clang-22 -save-temps left no device image"
    nm = subprocess.run([paths.tool("llvm-nm"), "-D", "--defined-only", str(image)], check=True,
                        capture_output=True, text=True).stdout.split()
    syms = [s for s in nm if s.startswith("__omp_offloading_")]
    pick = lambda tag: next(s for s in syms if tag in s)  # noqa: E731
    (d / "other.c").write_text("int f(void) { return 1; }\n")
    subprocess.run([paths.tool("clang"), "--target=aarch64-linux-gnu", "-c", "-emit-llvm", "other.c",
                    "-o", "other_aarch64.bc"], cwd=d, check=True, capture_output=True)
    exe = d / "fake_program"
    subprocess.run([paths.tool("clang"), "-O1", "-g", "-Wall", "-Werror",
                    "-I", os.path.join(paths.ROOT, "runtime", "include"),
                    os.path.join(PROGRAMS, "fake_program.c"), "-o", str(exe),
                    "-L", paths.LLVM_LIB, "-lomptarget", "-Wl,-rpath," + paths.LLVM_LIB],
                   check=True, capture_output=True)
    return exe, image, d / "other_aarch64.bc", pick("_main_l"), pick("_add1_l"), pick("_mul2_l")
