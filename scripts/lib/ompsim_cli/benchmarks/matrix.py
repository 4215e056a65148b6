"""Benchmark part 6: conformance matrix wall time, serial against pytest-xdist -n 2."""

import os
import subprocess
import sys
import tempfile
import time

from ompsim_base import paths
from .common import Unavailable, ratio


def bench_matrix(quick, programs=None):
    """`programs`: only conformance programs whose name contains one of these."""
    conf = os.path.join(paths.ROOT, "conformance", "test_matrix.py")
    if not os.path.exists(conf):
        raise Unavailable("conformance/test_matrix.py missing")
    r = subprocess.run([sys.executable, "-c", "import xdist"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        raise Unavailable("pytest-xdist not installed for %s (python3-pytest-xdist)" % sys.executable)
    out = {"unit": "s wall (cold build cache each run)", "runs": {}}
    env = dict(os.environ, OMPSIM_BUILD_DIR=paths.BUILD)
    for label, workers in (("serial", "0"), ("xdist2", "2")):
        with tempfile.TemporaryDirectory(prefix="ompsim-bench-matrix-") as tmp:
            cmd = [sys.executable, "-m", "pytest", conf, "-q", "-p", "no:cacheprovider", "-n", workers,
                   "--conformance-out=" + tmp] + ["--program=" + p for p in programs or []]
            t0 = time.perf_counter()
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=paths.ROOT,
                               env=env)
            wall = time.perf_counter() - t0
            summary = (r.stdout.strip().splitlines() or [""])[-1]
            out["runs"][label] = {"wall_s": wall, "exit": r.returncode, "summary": summary}
    out["serial_over_xdist"] = ratio(out["runs"]["serial"]["wall_s"], out["runs"]["xdist2"]["wall_s"])
    return out
