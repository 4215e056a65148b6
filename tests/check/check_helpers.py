"""Helpers of the map checker's tests: compile with `ompsim cc -g`, run with OMPSIM_CHECK."""
import os
import subprocess

import pytest

from ompsim_base import backends, paths

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")
PREFIX = "ompsim: check: "


def compile_program(src, out_dir, debug=True):
    """Builds one offload program with `ompsim cc -g` (the reports name variables from debug info)."""
    exe = os.path.join(str(out_dir), os.path.splitext(os.path.basename(src))[0] + ".exe")
    cmd = [OMPSIM, "cc", "-O1"] + (["-g"] if debug else []) + [src, "-o", exe]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(out_dir),
                       timeout=300)
    assert r.returncode == 0, "compile failed: %s\n%s" % (" ".join(cmd), r.stdout)
    return exe


def run(exe, backend, check="1", extra_env=None, timeout=120):
    """Runs `exe` on `backend` with OMPSIM_CHECK=`check` (None: unset); returns CompletedProcess."""
    why = backends.unavailable_reason(backend)
    if why:
        pytest.skip("backend %s unavailable: %s" % (backend, why))
    env = backends.environment(backend)
    env.pop("OMPSIM_CHECK", None)
    if check is not None:
        env["OMPSIM_CHECK"] = check
    env.update(extra_env or {})
    return subprocess.run([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          timeout=timeout, cwd=os.path.dirname(str(exe)))


def reports(text):
    """The checker's lines in `text`."""
    return [ln for ln in text.splitlines() if ln.startswith(PREFIX)]
