"""Benchmark part 6: conformance matrix wall time, serial against pytest-xdist -n 2 (each
from an empty compile cache), and -n 2 again with the cache the first -n 2 run filled."""

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
    out = {"unit": "s wall (cold: an empty compile cache; warm: the cache the cold -n 2 run filled)", "runs": {}}
    with tempfile.TemporaryDirectory(prefix="ompsim-bench-matrix-") as tmp:
        for label, workers, cache in (("serial", "0", "serial"), ("xdist2", "2", "xdist2"),
                                      ("xdist2_warm", "2", "xdist2")):
            env = dict(os.environ, OMPSIM_BUILD_DIR=paths.BUILD,
                       OMPSIM_COMPILE_CACHE=os.path.join(tmp, "compile-cache-" + cache))
            cmd = [sys.executable, "-m", "pytest", conf, "-q", "-p", "no:cacheprovider", "-n", workers,
                   "--conformance-out=" + os.path.join(tmp, "out-" + label)]
            cmd += ["--program=" + p for p in programs or []]
            t0 = time.perf_counter()
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=paths.ROOT,
                               env=env)
            wall = time.perf_counter() - t0
            summary = (r.stdout.strip().splitlines() or [""])[-1]
            out["runs"][label] = {"wall_s": wall, "exit": r.returncode, "summary": summary}
    out["serial_over_xdist"] = ratio(out["runs"]["serial"]["wall_s"], out["runs"]["xdist2"]["wall_s"])
    out["warm_over_cold"] = ratio(out["runs"]["xdist2_warm"]["wall_s"], out["runs"]["xdist2"]["wall_s"])
    return out
