"""Helpers of the mapping tests: compile with `ompsim cc`, run on a backend."""
import os
import subprocess

import pytest

from ompsim_base import backends, paths

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")

#: The oracle first: ompsim's backends must print what it prints.
BACKENDS = ("host-upstream", "ours-host", "sim")


def compile_program(src, out_dir, extra=()):
    """Builds one offload program with `ompsim cc`; returns the executable."""
    exe = os.path.join(str(out_dir), os.path.splitext(os.path.basename(src))[0] + ".exe")
    cmd = [OMPSIM, "cc", "-O1", "-g", src, "-o", exe, *extra]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       cwd=str(out_dir), timeout=300)
    assert r.returncode == 0, "compile failed: %s\n%s" % (" ".join(cmd), r.stdout)
    return exe


def run(exe, backend, env=None, args=(), timeout=120):
    """Runs `exe` on `backend`; returns CompletedProcess (text)."""
    why = backends.unavailable_reason(backend)
    if why:
        pytest.skip("backend %s unavailable: %s" % (backend, why))
    e = backends.environment(backend)
    e.update(env or {})
    return subprocess.run([str(exe), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=e, timeout=timeout, cwd=os.path.dirname(str(exe)))


def ompsim_lines(text):
    return [l for l in text.splitlines() if l.startswith("ompsim: ")]


def check_ok(r, backend):
    assert r.returncode == 0, "%s: exit %d\nstdout:\n%s\nstderr:\n%s" % (
        backend, r.returncode, r.stdout, r.stderr)
    assert ompsim_lines(r.stderr) == [], r.stderr
