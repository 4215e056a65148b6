"""Helpers the benchmark parts share: compiling and running the generated programs, parsing their output."""

import hashlib
import os
import subprocess
import time

from ompsim_base import backends, paths


KiB, MiB = 1024, 1024 * 1024


class Unavailable(Exception):
    """A measurement that cannot run here; the message says why (one line)."""


# --------------------------------------------------------------------------- helpers

def say(msg):
    print("ompsim bench: " + msg, flush=True)


def cache_dir():
    """Generated programs and their builds (inside the git-ignored build folder)."""
    d = paths.output_dir(os.path.join("ompsim-bench", "programs")) or os.path.join(paths.BUILD, "bench", "programs")
    os.makedirs(d, exist_ok=True)
    return d


def ompsim_cc():
    return [os.path.join(paths.ROOT, "scripts", "ompsim"), "cc"]


def compile_program(name, source, cc_flags, timeout=3600, opt="-O2"):
    """Compiles `source` with `ompsim cc <cc_flags> <opt>` once; later calls reuse the cached binary."""
    key = hashlib.sha256((source + "\0" + " ".join(cc_flags + [opt])).encode()).hexdigest()[:12]
    d = os.path.join(cache_dir(), "%s-%s" % (name, key))
    exe = os.path.join(d, "prog")
    if os.path.exists(exe):
        return exe
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "prog.c")
    with open(src, "w") as f:
        f.write(source)
    cmd = ompsim_cc() + cc_flags + [opt, src, "-o", exe + ".tmp"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=d, timeout=timeout)
    if r.returncode != 0:
        last = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
        raise Unavailable("compiling %s failed (ompsim cc exited %d): %s" % (name, r.returncode, last))
    os.rename(exe + ".tmp", exe)
    say("compiled %s in %.1fs (cached in %s)" % (name, time.perf_counter() - t0, d))
    return exe


def backend_env(backend):
    why = backends.unavailable_reason(backend)
    if why:
        raise Unavailable("backend %s: %s" % (backend, why))
    env = backends.environment(backend)
    env.setdefault("OMPSIM_BUILD_DIR", paths.BUILD)
    return env


def run_program(exe, args, env, timeout=600, marker="done=1"):
    """Runs a benchmark program once until it prints a line containing `marker`.

    Returns (stdout up to the marker, seconds from spawn to the marker, note).
    The time stops at the marker so that process teardown (which differs by
    backend) is not part of any figure. A program that prints its results but
    does not exit within 10 s is killed and the note says so (a real defect to
    report, but its figures were complete). Raises Unavailable when the program
    fails or never prints the marker.
    """
    import threading
    name = os.path.basename(os.path.dirname(exe))
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe] + [str(a) for a in args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines, seen = [], {}
    err = []

    def read_out():
        for line in proc.stdout:
            lines.append(line)
            if marker in line and "t" not in seen:
                seen["t"] = time.perf_counter()

    def read_err():
        err.extend(proc.stderr)

    readers = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
    for t in readers:
        t.start()
    note = None
    deadline = t0 + timeout
    while proc.poll() is None and "t" not in seen and time.perf_counter() < deadline:
        time.sleep(0.0005)
    if "t" in seen and proc.poll() is None:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            note = "process printed its results but did not exit within 10 s; killed"
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for t in readers:
        t.join(timeout=5)
    text = "".join(lines)
    if "t" not in seen:
        if proc.returncode not in (0, None) and not note and time.perf_counter() < deadline:
            last = ([l.strip() for l in err if l.strip()] or [l.strip() for l in lines if l.strip()] or
                    ["(no output)"])[-1]
            raise Unavailable("%s exited %d: %s" % (name, proc.returncode, last))
        raise Unavailable("%s printed no results within %ds" % (name, timeout))
    if note is None and proc.returncode != 0:
        last = ([l.strip() for l in err if l.strip()] or ["(no output)"])[-1]
        note = "process exited %d after printing its results: %s" % (proc.returncode, last)
    return text, seen["t"] - t0, note


def parse_kv(text):
    """`key=value` words of a program's output, values as floats."""
    out = {}
    for word in text.split():
        if "=" in word:
            k, v = word.split("=", 1)
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def ratio(a, b):
    return None if not a or not b else a / b


#: Timing helpers of the generated C programs: a monotonic clock in ns and a
#: qsort comparator for doubles (medians and percentiles).
TIMING_C = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
"""
