"""`ompsim bench [--quick] [--no-build] [--skip-matrix] [--only PARTS]`: ompsim's benchmarks.

Runs six measurements side by side in one run and reports ratios (absolute
times on a shared 2-core machine are noisy; ratios taken in the same run are
what the goals are stated in):

  lookup        device translate (ns/lookup) vs binary search and unordered_map
  registration  __tgt_register_lib to a ready table, 1Ki/10Ki/100Ki indirect functions
  launch        empty target region latency, median and p99, per backend
  bandwidth     host<->device transfers 4KiB..256MiB on sim vs memcpy
  imageload     ELF image vs bitcode JIT, time to first kernel by program size
  matrix        conformance matrix wall time, serial vs pytest-xdist -n 2
  concurrency   1/2/4/8 host threads launching nowait/depend regions, sim vs ours-host
  devices       16 sim devices in one process: start-up, and memory of each idle executor

A part whose prerequisites are missing prints `not available: <why>` and is
recorded as such; no number is ever made up. Results go to docs/perf/results.json,
plots to docs/perf/*.png, and the generated table into docs/performance.md
between the `<!-- bench:begin -->` / `<!-- bench:end -->` markers.
"""
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from . import backends, paths

PARTS = ["lookup", "registration", "launch", "bandwidth", "imageload", "matrix", "concurrency", "devices"]
# An installed tree is read-only: there the results go to ./ompsim-bench.
DOC = os.path.join(paths.output_dir("ompsim-bench") or os.path.join(paths.ROOT, "docs"), "performance.md")
PERF_DIR = paths.output_dir(os.path.join("ompsim-bench", "perf")) or os.path.join(paths.ROOT, "docs", "perf")
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"

LOOKUP_SIZES = [1, 16, 1024, 65536, 1048576]
#: ompsim's lookup (the row the goals are about).
LOOKUP_OURS = "ompsim"
#: Rows present at every size. The goals compare `ompsim` with the `_call`
#: baselines: each design behind the same out-of-line call device code makes
#: to any runtime's lookup. The inlined baselines and `ompsim_inline` (the
#: runtime's layout inlined, no counters) are references.
LOOKUP_IMPLS = [LOOKUP_OURS, "binary_search_call", "unordered_map_call", "binary_search", "unordered_map",
                "ompsim_inline"]
LOOKUP_BASELINES = ["binary_search_call", "unordered_map_call"]
LOOKUP_BSEARCH = "binary_search_call"
#: Shown in the table where measured (size 1 only): the cost of the call alone.
LOOKUP_COLUMNS = LOOKUP_IMPLS + ["call_floor"]
LOOKUP_PATTERNS = ["random_hit", "sequential_hit", "random_miss", "sequential_miss"]
KiB, MiB = 1024, 1024 * 1024
BANDWIDTH_SIZES = [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB]


class Unavailable(Exception):
    """A measurement that cannot run here; the message says why (one line)."""


def register(sub):
    p = sub.add_parser("bench", help="run the benchmarks (ratios side by side in one run) and update docs/performance.md",
                       epilog="example: ompsim bench --quick --only launch,bandwidth",
                       description=__doc__, formatter_class=_raw())
    p.add_argument("--quick", action="store_true",
                   help="shorter runs: registration at 1Ki/10Ki only, fewer repetitions")
    p.add_argument("--no-build", action="store_true", help="do not run scripts/setup first")
    p.add_argument("--skip-matrix", action="store_true", help="skip the (long) matrix wall-time part")
    p.add_argument("--only", metavar="PARTS", help="comma list of parts: " + ",".join(PARTS))
    p.add_argument("--out", default=PERF_DIR, metavar="DIR", help="results.json and plots (default docs/perf)")
    p.add_argument("--doc", default=DOC, metavar="MD", help="Markdown file to update (default docs/performance.md)")
    p.set_defaults(func=main)


def _raw():
    import argparse
    return argparse.RawDescriptionHelpFormatter


# --------------------------------------------------------------------------- helpers

def say(msg):
    print("ompsim bench: " + msg, flush=True)


def cache_dir():
    """Generated programs and their builds (inside the git-ignored build folder)."""
    d = paths.output_dir(os.path.join("ompsim-bench", "programs")) or os.path.join(paths.BUILD, "bench", "programs")
    os.makedirs(d, exist_ok=True)
    return d


def ompsim_cc():
    return [sys.executable, os.path.join(paths.ROOT, "scripts", "ompsim"), "cc"]


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


# --------------------------------------------------------------------------- 1. lookup

def lookup_goals(rows):
    """Evaluates the lookup goals on parsed rows {(impl, size, pattern): ns}.

    Returns {"never_slower": {...}, "faster_than_bsearch_64ki": {...}} where each
    has met (bool or None), the worst ratio and where it occurred.
    """
    worst = None
    for n in LOOKUP_SIZES:
        for p in LOOKUP_PATTERNS:
            ours = rows.get((LOOKUP_OURS, n, p))
            bases = [rows.get((b, n, p)) for b in LOOKUP_BASELINES]
            bases = [(b, v) for b, v in zip(LOOKUP_BASELINES, bases) if v]
            if not ours or not bases:
                continue
            best_name, best = min(bases, key=lambda x: x[1])
            r = best / ours  # >= 1: ours is at least as fast as the best baseline
            if worst is None or r < worst["ratio"]:
                worst = {"ratio": r, "size": n, "pattern": p, "best_baseline": best_name}
    fail_never = []
    for n in LOOKUP_SIZES:
        for p in LOOKUP_PATTERNS:
            ours = rows.get((LOOKUP_OURS, n, p))
            bases = [rows.get((b, n, p)) for b in LOOKUP_BASELINES if rows.get((b, n, p))]
            if ours and bases and min(bases) / ours < 1.0:
                fail_never.append({"size": n, "pattern": p, "ratio": min(bases) / ours})
    never = {"met": None if worst is None else worst["ratio"] >= 1.0, "worst": worst, "misses": fail_never}
    big = []
    for n in LOOKUP_SIZES:
        if n < 65536:
            continue
        for p in LOOKUP_PATTERNS:
            ours, bs = rows.get((LOOKUP_OURS, n, p)), rows.get((LOOKUP_BSEARCH, n, p))
            if ours and bs:
                big.append({"size": n, "pattern": p, "ratio": bs / ours})
    low = min(big, key=lambda x: x["ratio"]) if big else None
    fast = {"met": None if low is None else low["ratio"] >= 1.5, "worst": low, "all": big}
    return {"never_slower": never, "faster_than_bsearch_64ki": fast}


def parse_gbench(doc):
    """Google Benchmark JSON -> ({(impl, size, pattern): cpu ns}, {same key: counters}).

    With repetitions, the median aggregate is used; otherwise the single run.
    """
    times, counters = {}, {}
    have_median = any(b.get("aggregate_name") == "median" for b in doc.get("benchmarks", []))
    for b in doc.get("benchmarks", []):
        if have_median and b.get("aggregate_name") != "median":
            continue
        if not have_median and b.get("run_type") == "aggregate":
            continue
        parts = b.get("run_name", b["name"]).split("/")
        if len(parts) != 4 or parts[0] != "lookup":
            continue
        key = (parts[1], int(parts[2]), parts[3])
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        times[key] = b["cpu_time"] * scale
        counters[key] = {k: b[k] for k in ("bytes_per_entry", "cache_misses_per_lookup") if k in b}
    return times, counters


def bench_lookup(quick):
    exe = os.path.join(paths.BIN, "ompsim_lookup_bench")
    if not os.path.exists(exe):
        raise Unavailable("%s not built (configure with OMPSIM_BUILD_BENCHMARKS=ON and runtime/device;bench)" % exe)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out_json = f.name
    cmd = [exe, "--benchmark_format=console", "--benchmark_out_format=json", "--benchmark_out=" + out_json,
           "--benchmark_min_time=%s" % ("0.05" if quick else "0.2"),
           "--benchmark_repetitions=%d" % (1 if quick else 3),
           "--benchmark_enable_random_interleaving=true"]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise Unavailable("ompsim_lookup_bench exited %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
    with open(out_json) as f:
        doc = json.load(f)
    os.unlink(out_json)
    times, counters = parse_gbench(doc)
    perf = doc.get("context", {}).get("perf_cache_misses", "not reported")
    perf_tool = perf_stat_status()
    rows = [{"impl": k[0], "size": k[1], "pattern": k[2], "ns": v, **counters[k]} for k, v in sorted(times.items())]
    return {"rows": rows, "goals": lookup_goals(times), "cache_misses": perf, "perf_stat": perf_tool,
            "unit": "cpu ns per lookup (median of repetitions)"}


def perf_stat_status():
    """Whether `perf stat -e cache-misses` can count here, as one line."""
    perf = shutil.which("perf")
    if not perf:
        return "not available: perf (linux-perf) not installed"
    r = subprocess.run([perf, "stat", "-x,", "-e", "cache-misses", "true"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or "<not supported>" in r.stdout or "<not counted>" in r.stdout:
        return "not available: `perf stat -e cache-misses` reports the event unsupported on this machine"
    return "available"


# --------------------------------------------------------------------------- 2. registration

def registration_source(n):
    fns = "\n".join("int ompsim_bench_f%d(int x) { return x * %d + %d; }" % (i, i % 7 + 1, i) for i in range(n))
    return """#include <stdio.h>
#pragma omp begin declare target indirect
%s
#pragma omp end declare target
int main(void) {
  int r = 0;
#pragma omp target map(tofrom : r)
  { r = 1; }
  if (r != 1) { fprintf(stderr, "target region did not run\\n"); return 1; }
  printf("done=1\\n");
  fflush(stdout);
  return 0;
}
""" % fns


REG_BACKENDS = ["ours-host", "host-upstream", "sim"]


def bench_registration(quick):
    counts = [1024, 10240] if quick else [1024, 10240, 102400]
    reps = 5 if quick else 9
    # -O0: registration does not depend on code quality, and clang-22's -O2
    # takes the better part of an hour on 100 Ki functions on 2 cores.
    exes = {n: compile_program("reg%d" % n, registration_source(n), ["--translate=native"], opt="-O0")
            for n in [0] + counts}
    out = {"counts": counts, "backends": {}, "unit": "ms (median time from spawn to the line printed after the first target region, minus the same for a 0-function program)"}
    for be in REG_BACKENDS:
        try:
            env = backend_env(be)
            # Interleave sizes so slow drifts of machine load hit every size alike.
            walls = {n: [] for n in exes}
            for _ in range(reps):
                for n, exe in exes.items():
                    _, wall, note = run_program(exe, [], env)
                    walls[n].append(wall)
                    if note:
                        out.setdefault("notes", {})[be] = note
            base = statistics.median(walls[0])
            out["backends"][be] = {str(n): (statistics.median(walls[n]) - base) * 1e3 for n in counts}
            out["backends"][be]["baseline_ms"] = base * 1e3
        except Unavailable as e:
            out["backends"][be] = {"unavailable": str(e)}
            say("registration on %s: not available: %s" % (be, e))
    out["goal"] = registration_goal(out)
    return out


def registration_goal(part):
    """upstream/ours per count. A count where either side's time over the baseline
    program is not positive lies within run-to-run noise and is left out of the
    goal (listed under within_noise) rather than turned into a meaningless ratio."""
    ours, up = part["backends"].get("ours-host", {}), part["backends"].get("host-upstream", {})
    rs, noise = [], []
    for n in part["counts"]:
        a, b = up.get(str(n)), ours.get(str(n))
        if a is None or b is None:
            continue
        if a <= 0 or b <= 0:
            noise.append(n)
        else:
            rs.append(a / b)
    # sim against ours-host, and ours-host against stock, from 10 Ki up.
    sim = part["backends"].get("sim", {})
    sim_over, ours_over = {}, {}
    for n in part["counts"]:
        if n < 10240:
            continue
        s_, o, u = sim.get(str(n)), ours.get(str(n)), up.get(str(n))
        if s_ is not None and o and o > 0 and s_ > 0:
            sim_over[str(n)] = s_ / o
        if o is not None and u and u > 0 and o > 0:
            ours_over[str(n)] = o / u
    return {"met": None if not rs else min(rs) >= 1.0, "upstream_over_ours": rs, "within_noise": noise,
            "sim_over_ours": sim_over, "sim_met": None if not sim_over else max(sim_over.values()) <= 1.5,
            "ours_over_upstream": ours_over,
            "ours_met": None if not ours_over else max(ours_over.values()) <= 0.7}


# --------------------------------------------------------------------------- 3. launch

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

LAUNCH_SOURCE = TIMING_C + r"""int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  double *t = malloc(sizeof(double) * n);
  for (int i = 0; i < 20; ++i) { /* warm-up: image load, first-launch setup */
#pragma omp target
    { }
  }
  for (int i = 0; i < n; ++i) {
    double t0 = now_ns();
#pragma omp target
    { }
    t[i] = now_ns() - t0;
  }
  qsort(t, n, sizeof(double), by_value);
  printf("launches=%d median_ns=%.0f p99_ns=%.0f min_ns=%.0f done=1\n", n, t[n / 2], t[(n * 99) / 100], t[0]);
  fflush(stdout);
  free(t);
  return 0;
}
"""

LAUNCH_BACKENDS = ["sim", "ours-host", "host-upstream"]


def bench_launch(quick):
    exe = compile_program("launch", LAUNCH_SOURCE, ["--translate=native"])
    n = 300 if quick else 2000
    out = {"launches": n, "backends": {}, "unit": "us per empty target region"}
    for be in LAUNCH_BACKENDS:
        try:
            text, _, note = run_program(exe, [n], backend_env(be))
            if note:
                out.setdefault("notes", {})[be] = note
            kv = parse_kv(text)
            if "median_ns" not in kv:
                raise Unavailable("launch program printed no statistics: %r" % text.strip()[:200])
            out["backends"][be] = {"median_us": kv["median_ns"] / 1e3, "p99_us": kv["p99_ns"] / 1e3,
                                   "min_us": kv["min_ns"] / 1e3}
        except Unavailable as e:
            out["backends"][be] = {"unavailable": str(e)}
            say("launch on %s: not available: %s" % (be, e))
    sim, up = out["backends"]["sim"], out["backends"]["host-upstream"]
    r = ratio(sim.get("median_us"), up.get("median_us"))
    out["goal"] = {"met": None if r is None else r <= 3.0, "sim_over_upstream_median": r,
                   "sim_over_upstream_p99": ratio(sim.get("p99_us"), up.get("p99_us"))}
    return out


# --------------------------------------------------------------------------- 4. bandwidth

BANDWIDTH_SOURCE = TIMING_C + r"""/* Times h2d (target update to), d2h (target update from) and a host memcpy of
 * the same size on a buffer mapped once (allocation is not timed). */
int main(int argc, char **argv) {
  for (int a = 1; a < argc; ++a) {
    size_t size = strtoull(argv[a], 0, 10);
    int reps = (int)((64ull << 20) / size);
    reps = reps < 3 ? 3 : reps > 50 ? 50 : reps;
    char *buf = malloc(size), *copy = malloc(size);
    if (!buf || !copy) { fprintf(stderr, "out of memory for %zu bytes\n", size); return 1; }
    memset(buf, 1, size);
    memset(copy, 2, size);
    double h2d[50], d2h[50], cpy[50];
#pragma omp target enter data map(alloc : buf[0:size])
    for (int r = 0; r < reps; ++r) {
      double t0 = now_ns();
#pragma omp target update to(buf[0:size])
      double t1 = now_ns();
#pragma omp target update from(buf[0:size])
      double t2 = now_ns();
      memcpy(copy, buf, size);
      double t3 = now_ns();
      h2d[r] = t1 - t0; d2h[r] = t2 - t1; cpy[r] = t3 - t2;
    }
#pragma omp target exit data map(delete : buf[0:size])
    if (copy[size - 1] != 1) { fprintf(stderr, "data did not round-trip\n"); return 1; }
    qsort(h2d, reps, sizeof(double), by_value);
    qsort(d2h, reps, sizeof(double), by_value);
    qsort(cpy, reps, sizeof(double), by_value);
    printf("size=%zu h2d_ns=%.0f d2h_ns=%.0f memcpy_ns=%.0f\n", size, h2d[reps / 2], d2h[reps / 2], cpy[reps / 2]);
    fflush(stdout);
    free(buf);
    free(copy);
  }
  printf("done=1\n");
  fflush(stdout);
  return 0;
}
"""

BANDWIDTH_BACKENDS = ["sim", "ours-host", "host-upstream"]


def bench_bandwidth(quick):
    exe = compile_program("bandwidth", BANDWIDTH_SOURCE, ["--translate=native"])
    sizes = [s for s in BANDWIDTH_SIZES if not quick or s <= 64 * MiB]
    out = {"sizes": sizes, "backends": {}, "unit": "GB/s (median of repetitions); memcpy measured in the same process"}
    for be in BANDWIDTH_BACKENDS:
        try:
            text, _, note = run_program(exe, sizes, backend_env(be), timeout=900)
            if note:
                out.setdefault("notes", {})[be] = note
            rows = []
            for line in text.splitlines():
                kv = parse_kv(line)
                if "size" in kv:
                    s = kv["size"]
                    rows.append({"size": int(s), "h2d_gbs": s / kv["h2d_ns"], "d2h_gbs": s / kv["d2h_ns"],
                                 "memcpy_gbs": s / kv["memcpy_ns"]})
            if len(rows) != len(sizes):
                raise Unavailable("bandwidth program printed %d of %d sizes" % (len(rows), len(sizes)))
            out["backends"][be] = rows
        except Unavailable as e:
            out["backends"][be] = {"unavailable": str(e)}
            say("bandwidth on %s: not available: %s" % (be, e))
    sim = out["backends"].get("sim")
    if isinstance(sim, list):
        big = [min(r["h2d_gbs"], r["d2h_gbs"]) / r["memcpy_gbs"] for r in sim if r["size"] >= MiB]
        out["goal"] = {"met": min(big) >= 0.5 if big else None, "worst_fraction_of_memcpy_from_1MiB": min(big)}
    else:
        out["goal"] = {"met": None}
    return out


# --------------------------------------------------------------------------- 5. image load

def imageload_source(n):
    fns = "\n".join("""int ompsim_bench_g%d(int x) {
  int s = x;
  for (int k = 0; k < (x & 7) + %d; ++k) s = s * 31 + k * %d;
  return s;
}""" % (i, i % 5 + 2, i + 1) for i in range(n))
    calls = "\n".join("    s += ompsim_bench_g%d(s & 1023);" % i for i in range(n))
    # After the figure (done=1): a second kernel calls a function nothing ran
    # before; its first launch against its second is the cost of a first call
    # of a function not yet compiled (bitcode) or already loaded (ELF).
    return TIMING_C + """#pragma omp declare target
%s
int ompsim_bench_late(int x) {
  int s = x;
  for (int k = 0; k < (x & 7) + 3; ++k) s = s * 17 + k;
  return s;
}
#pragma omp end declare target
int main(void) {
  int s = 1;
#pragma omp target map(tofrom : s)
  {
%s
  }
  printf("checksum=%%d done=1\\n", s);
  fflush(stdout);
  double t[2];
  for (int r = 0; r < 2; ++r) {
    double t0 = now_ns();
#pragma omp target map(tofrom : s)
    { s = ompsim_bench_late(s); }
    t[r] = now_ns() - t0;
  }
  printf("late_first_ns=%%.0f late_again_ns=%%.0f checksum2=%%d\\n", t[0], t[1], s);
  fflush(stdout);
  return 0;
}
""" % (fns, calls)


def bench_imageload(quick):
    # clang-22 -O2 needs minutes for the 1000-function kernel on 2 cores and
    # far longer beyond it, so 1000 is the largest size in both modes.
    sizes = [10, 100, 1000]
    reps = 3 if quick else 5
    out = {"sizes": sizes, "unit": "ms to first kernel (median time from spawn to the line printed after the kernel)", "elf": {}, "ir": {},
           "first_call_us": {"elf": {}, "ir": {}}}
    for image, be in (("elf", "sim"), ("ir", "sim-ir")):
        try:
            env = backend_env(be)
            for n in sizes:
                exe = compile_program("image%d-%s" % (n, image), imageload_source(n),
                                      ["--translate=native", "--image=" + image])
                walls, firsts = [], []
                for _ in range(reps):
                    text, wall, note = run_program(exe, [], env)
                    walls.append(wall)
                    kv = parse_kv(text)
                    if "late_first_ns" in kv:
                        firsts.append((kv["late_first_ns"] - kv["late_again_ns"]) / 1e3)
                    if note:
                        out.setdefault("notes", {})[be] = note
                out[image][str(n)] = statistics.median(walls) * 1e3
                if firsts:
                    out["first_call_us"][image][str(n)] = statistics.median(firsts)
        except Unavailable as e:
            out[image] = {"unavailable": str(e)}
            say("image load (%s on %s): not available: %s" % (image, be, e))
    out["ir_over_elf"] = {str(n): ratio(out["ir"].get(str(n)), out["elf"].get(str(n))) for n in sizes}
    r10, r1000 = out["ir_over_elf"].get("10"), out["ir_over_elf"].get("1000")
    out["goal"] = {"met": None if r10 is None or r1000 is None else r10 <= 1.5 and r1000 <= 3.0,
                   "ir_over_elf_10": r10, "ir_over_elf_1000": r1000}
    return out


# --------------------------------------------------------------------------- 6. matrix

def bench_matrix(quick):
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
                   "--conformance-out=" + tmp]
            t0 = time.perf_counter()
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=paths.ROOT,
                               env=env)
            wall = time.perf_counter() - t0
            summary = (r.stdout.strip().splitlines() or [""])[-1]
            out["runs"][label] = {"wall_s": wall, "exit": r.returncode, "summary": summary}
    out["serial_over_xdist"] = ratio(out["runs"]["serial"]["wall_s"], out["runs"]["xdist2"]["wall_s"])
    return out


# --------------------------------------------------------------------------- 7. concurrency

CONCURRENCY_SOURCE = TIMING_C + r"""#include <omp.h>
/* argv: host threads, total target regions, devices to spread them over.
 * Each thread launches its share of small nowait regions (a depend chain on
 * its own mapped buffer), then waits; the result of every chain is checked.
 * One warm-up region per device runs before the clock starts. */
enum { N = 64 };
int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int total = argc > 2 ? atoi(argv[2]) : 1600;
  int use = argc > 3 ? atoi(argv[3]) : 1;
  int devices = omp_get_num_devices();
  if (use > devices) use = devices;
  if (use < 1) { fprintf(stderr, "no devices\n"); return 2; }
  for (int d = 0; d < use; ++d) {
    int w = 0;
#pragma omp target device(d) map(tofrom : w)
    { w += 1; }
    if (w != 1) { fprintf(stderr, "warm-up region did not run on device %d\n", d); return 1; }
  }
  int bad = 0;
  double t0 = now_ns();
#pragma omp parallel num_threads(threads) reduction(+ : bad)
  {
    int t = omp_get_thread_num(), dev = t % use, per = total / threads;
    int buf[N];
    for (int i = 0; i < N; ++i) buf[i] = t + i;
    for (int k = 0; k < per; ++k) {
#pragma omp target nowait device(dev) map(tofrom : buf) depend(inout : buf)
      for (int i = 0; i < N; ++i) buf[i] += 1;
    }
#pragma omp taskwait
    for (int i = 0; i < N; ++i) bad += buf[i] != t + i + per;
  }
  double t1 = now_ns();
  if (bad) { fprintf(stderr, "%d wrong results\n", bad); return 1; }
  printf("threads=%d devices=%d total=%d wall_ns=%.0f done=1\n", threads, use, total, t1 - t0);
  fflush(stdout);
  return 0;
}
"""

CONCURRENCY_THREADS = [1, 2, 4, 8]
#: (label, backend, devices): ours-host has one device, so both sim rows compare with it.
CONCURRENCY_RUNS = [("sim", "sim", 1), ("sim-2dev", "sim", 2), ("ours-host", "ours-host", 1)]


def bench_concurrency(quick):
    exe = compile_program("concurrency", CONCURRENCY_SOURCE, ["--translate=native"])
    total = 800 if quick else 1600
    reps = 3 if quick else 5
    out = {"threads": CONCURRENCY_THREADS, "total": total, "runs": {},
           "unit": "ms wall for %d nowait target regions in all (median of %d runs), image load excluded" % (total, reps)}
    for label, be, devices in CONCURRENCY_RUNS:
        try:
            env = backend_env(be)
            if devices > 1:
                env["OMPSIM_NUM_DEVICES"] = str(devices)
            walls = {t: [] for t in CONCURRENCY_THREADS}
            for _ in range(reps):
                for t in CONCURRENCY_THREADS:
                    text, _, note = run_program(exe, [t, total, devices], env)
                    if note:
                        out.setdefault("notes", {})[label] = note
                    kv = parse_kv(text)
                    if "wall_ns" not in kv:
                        raise Unavailable("concurrency program printed no time: %r" % text.strip()[:200])
                    walls[t].append(kv["wall_ns"] / 1e6)
            out["runs"][label] = {str(t): statistics.median(w) for t, w in walls.items()}
        except Unavailable as e:
            out["runs"][label] = {"unavailable": str(e)}
            say("concurrency (%s): not available: %s" % (label, e))
    out["goal"] = concurrency_goal(out["runs"])
    return out


def concurrency_goal(runs):
    """Per sim run: its ratio to ours-host and to its own 1-thread time at each
    thread count; met when every ratio to ours-host is <= 2 and no thread
    count is slower than one thread."""
    host = runs.get("ours-host", {})
    goal = {}
    for label in ("sim", "sim-2dev"):
        r = runs.get(label, {})
        if "unavailable" in r or "unavailable" in host or not r or not host:
            goal[label] = {"met": None}
            continue
        over = {str(t): ratio(r[str(t)], host[str(t)]) for t in CONCURRENCY_THREADS}
        vs_one = {str(t): ratio(r[str(t)], r["1"]) for t in CONCURRENCY_THREADS}
        worst_over, worst_vs_one = max(over.values()), max(vs_one.values())
        goal[label] = {"over_ours_host": over, "over_one_thread": vs_one, "worst_over_ours_host": worst_over,
                       "worst_over_one_thread": worst_vs_one,
                       "met": worst_over <= 2.0 and worst_vs_one <= 1.0}
    return goal


# --------------------------------------------------------------------------- 8. devices

DEVICES_SOURCE = r"""#include <omp.h>
#include <stdio.h>
/* A kernel on every device at once (one host thread each), checked; then
 * "ready=1" and a wait for a line on stdin while the executors sit idle. */
enum { N = 256 };
int main(void) {
  int devices = omp_get_num_devices(), bad = 0;
#pragma omp parallel for num_threads(devices) schedule(static, 1) reduction(+ : bad)
  for (int d = 0; d < devices; ++d) {
    int buf[N];
    for (int i = 0; i < N; ++i) buf[i] = i;
#pragma omp target teams distribute parallel for device(d) map(tofrom : buf) num_teams(2)
    for (int i = 0; i < N; ++i) buf[i] = buf[i] * 3 + d;
    for (int i = 0; i < N; ++i) bad += buf[i] != i * 3 + d;
  }
  if (bad) { fprintf(stderr, "%d wrong results\n", bad); return 1; }
  printf("devices=%d ready=1\n", devices);
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) line[0] = 0;
  return 0;
}
"""


def _executor_memory(host_pid):
    """[(VmRSS KiB, Pss KiB)] of the live executors started for `host_pid`."""
    r = subprocess.run(["pgrep", "-f", "ompsim-device .*--parent %d$" % host_pid], stdout=subprocess.PIPE, text=True)
    out = []
    for pid in (int(x) for x in r.stdout.split()):
        rss = pss = None
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1])
            with open("/proc/%d/smaps_rollup" % pid) as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss = int(line.split()[1])
        except OSError:
            continue
        if rss is not None:
            out.append((rss, pss))
    return out


def _devices_run(exe, env, timeout=300):
    """Seconds from spawn to ready=1 and the executors' memory while idle."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    import threading
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        line = proc.stdout.readline()
        wall = time.perf_counter() - t0
        if "ready=1" not in line:
            proc.kill()
            err = proc.stderr.read().strip().splitlines()
            raise Unavailable("devices program did not get ready: %s" % ((err or [line.strip() or "(no output)"])[-1]))
        time.sleep(0.2)  # let the executors settle after their kernels
        mem = _executor_memory(proc.pid)
        proc.communicate(input="\n", timeout=60)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return wall, mem


def bench_devices(quick):
    exe = compile_program("devices", DEVICES_SOURCE, ["--translate=native"])
    reps = 3 if quick else 5
    out = {"unit": "ms from spawn to a checked kernel done on every device (median); memory of each idle executor",
           "counts": [1, 16], "startup_ms": {}, "rss_kib": {}, "pss_kib": {}}
    env = backend_env("sim")
    for n in out["counts"]:
        walls, rss, pss = [], [], []
        for _ in range(reps):
            e = dict(env, OMPSIM_NUM_DEVICES=str(n))
            wall, mem = _devices_run(exe, e)
            if len(mem) != n:
                raise Unavailable("expected %d executors, found %d" % (n, len(mem)))
            walls.append(wall)
            rss += [m[0] for m in mem]
            pss += [m[1] for m in mem if m[1] is not None]
        out["startup_ms"][str(n)] = statistics.median(walls) * 1e3
        out["rss_kib"][str(n)] = {"max": max(rss), "median": statistics.median(rss)}
        if pss:
            out["pss_kib"][str(n)] = {"max": max(pss), "median": statistics.median(pss)}
    rss16 = out["rss_kib"]["16"]["max"]
    start16 = out["startup_ms"]["16"]
    out["goal"] = {"met": rss16 <= 16 * 1024 and start16 < 1000, "max_rss_mib_16": rss16 / 1024.0,
                   "startup_ms_16": start16}
    return out


# --------------------------------------------------------------------------- report

def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = "%.0f GiB" % (int(f.readline().split()[1]) / 1024 / 1024)
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "kernel": platform.release(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def _fmt(v, digits=2):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return ("%%.%df" % digits) % v
    return str(v)


def _goal(met):
    return {True: "**met**", False: "**not met**", None: "not measured"}[met]


def _size(n):
    for unit, div in (("Mi", MiB), ("Ki", KiB)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return str(n)


def _notes(L, p):
    for be, note in sorted(p.get("notes", {}).items()):
        L.append("\nNote (%s): %s." % (be, note))


def render_markdown(res):
    """The generated section of docs/performance.md for a results dict."""
    L = []
    m = res.get("machine", {})
    L.append("Generated by `scripts/ompsim bench%s` on %s (%s cores, %s, Linux %s), %s." % (
        " --quick" if res.get("quick") else "", m.get("cpu", "?"), m.get("cores", "?"), m.get("memory", "?"),
        m.get("kernel", "?"), m.get("date", "?")))
    L.append("")
    parts = res.get("parts", {})

    def unavailable(name, title):
        p = parts.get(name)
        if p is None:
            L.append("### %s\n\nnot run in this invocation.\n" % title)
            return True
        if "unavailable" in p:
            L.append("### %s\n\nnot available: %s\n" % (title, p["unavailable"]))
            return True
        return False

    # 1. lookup
    if not unavailable("lookup", "1. Device lookup"):
        p = parts["lookup"]
        L.append("### 1. Device lookup\n")
        L.append("%s. `ompsim` is `__kmpc_target_translate_fptr` in libompsim-device.so, called as device code "
                 "calls it. `binary_search_call` and `unordered_map_call` are the baselines behind the same kind of "
                 "out-of-line call (the goals are judged on them); `binary_search` and `unordered_map` are the same "
                 "baselines inlined into the loop, `ompsim_inline` is ompsim's layout inlined without counters, and "
                 "`call_floor` (size 1) is the call alone (references).\n" % p["unit"])
        idx = {(r["impl"], r["size"], r["pattern"]): r for r in p["rows"]}
        L.append("| pattern | size | " + " | ".join(LOOKUP_COLUMNS) +
                 " | best baseline / ompsim | binary search / ompsim | best inlined baseline / ompsim |")
        L.append("|---|---|" + "---|" * len(LOOKUP_COLUMNS) + "---|---|---|")
        for pat in LOOKUP_PATTERNS:
            for n in LOOKUP_SIZES:
                cells = [_fmt(idx.get((i, n, pat), {}).get("ns"), 1) for i in LOOKUP_COLUMNS]
                ours = idx.get((LOOKUP_OURS, n, pat), {}).get("ns")
                bases = [idx.get((b, n, pat), {}).get("ns") for b in LOOKUP_BASELINES]
                bases = [b for b in bases if b]
                inlined = [idx.get((b, n, pat), {}).get("ns") for b in ("binary_search", "unordered_map")]
                inlined = [b for b in inlined if b]
                L.append("| %s | %s | %s | %s | %s | %s |" % (
                    pat, _size(n), " | ".join(cells), _fmt(ratio(min(bases), ours) if bases else None),
                    _fmt(ratio(idx.get((LOOKUP_BSEARCH, n, pat), {}).get("ns"), ours)),
                    _fmt(ratio(min(inlined), ours) if inlined else None)))
        L.append("")
        mem = []
        for i in LOOKUP_IMPLS:
            r = idx.get((i, LOOKUP_SIZES[-1], "random_hit"), {})
            if "bytes_per_entry" in r:
                mem.append("%s %.1f" % (i, r["bytes_per_entry"]))
        L.append("Memory per entry at %s entries (bytes, malloc'ed): %s.\n" % (_size(LOOKUP_SIZES[-1]), ", ".join(mem)))
        L.append("Cache misses per lookup: %s (perf tool: %s).\n" % (p["cache_misses"], p["perf_stat"]))
        g = p["goals"]
        w = g["never_slower"]["worst"]
        L.append("- Goal *never slower than the best baseline at any size*: %s; worst case best-baseline/ompsim = %s "
                 "at %s entries, %s (best baseline there: %s); %d of %d cells below 1.0." % (
                     _goal(g["never_slower"]["met"]), _fmt(w and w["ratio"]), w and _size(w["size"]),
                     w and w["pattern"], w and w["best_baseline"], len(g["never_slower"]["misses"]),
                     len(LOOKUP_SIZES) * len(LOOKUP_PATTERNS)))
        w = g["faster_than_bsearch_64ki"]["worst"]
        L.append("- Goal *>= 1.5x faster than plain binary search from 64 Ki up*: %s; lowest binary-search/ompsim = %s "
                 "at %s entries, %s.\n" % (_goal(g["faster_than_bsearch_64ki"]["met"]), _fmt(w and w["ratio"]),
                                           w and _size(w["size"]), w and w["pattern"]))
        L.append("![lookup](perf/lookup.png)\n")

    # 2. registration
    if not unavailable("registration", "2. Registration"):
        p = parts["registration"]
        L.append("### 2. Registration\n")
        L.append("%s; same binaries on each backend.\n" % p["unit"])
        L.append("| indirect functions | " + " | ".join(REG_BACKENDS) + " | upstream / ours-host |")
        L.append("|---|" + "---|" * len(REG_BACKENDS) + "---|")
        for n in p["counts"]:
            cells = []
            for be in REG_BACKENDS:
                b = p["backends"].get(be, {})
                cells.append("n/a" if "unavailable" in b else _fmt(b.get(str(n)), 1))
            a = p["backends"].get("host-upstream", {}).get(str(n))
            b = p["backends"].get("ours-host", {}).get(str(n))
            r = ratio(a, b) if a and b and a > 0 and b > 0 else None
            L.append("| %s | %s | %s |" % (_size(n), " | ".join(cells), _fmt(r)))
        for be in REG_BACKENDS:
            if "unavailable" in p["backends"].get(be, {}):
                L.append("\n%s: not available: %s" % (be, p["backends"][be]["unavailable"]))
        rs = p["goal"]["upstream_over_ours"]
        noise = p["goal"].get("within_noise", [])
        L.append("\n- Goal *not slower than upstream*: %s; upstream/ours = %s%s.\n" % (
            _goal(p["goal"]["met"]), ", ".join(_fmt(r) for r in rs) or "n/a",
            "" if not noise else " (at %s the difference to the 0-function program is within noise, "
            "so no ratio is taken there)" % ", ".join(_size(n) for n in noise)))
        g = p["goal"]
        if "sim_over_ours" in g:
            L.append("- Goal *sim at most 1.5x ours-host from 10 Ki up*: %s; sim/ours-host = %s.\n" % (
                _goal(g["sim_met"]), ", ".join("%s at %s" % (_fmt(v), _size(int(k)))
                                               for k, v in sorted(g["sim_over_ours"].items(), key=lambda x: int(x[0])))
                or "n/a"))
            L.append("- Goal *ours-host at most 0.7x stock from 10 Ki up*: %s; ours-host/upstream = %s.\n" % (
                _goal(g["ours_met"]), ", ".join("%s at %s" % (_fmt(v), _size(int(k))) for k, v in
                                                sorted(g["ours_over_upstream"].items(), key=lambda x: int(x[0])))
                or "n/a"))
        _notes(L, p)
        L.append("![registration](perf/registration.png)\n")

    # 3. launch
    if not unavailable("launch", "3. Launch latency"):
        p = parts["launch"]
        L.append("### 3. Launch latency\n")
        L.append("%s, %d launches after 20 warm-up launches, timed one by one with clock_gettime.\n" % (
            p["unit"], p["launches"]))
        L.append("| backend | median | p99 | min |")
        L.append("|---|---|---|---|")
        for be in LAUNCH_BACKENDS:
            b = p["backends"].get(be, {})
            if "unavailable" in b:
                L.append("| %s | not available: %s | | |" % (be, b["unavailable"]))
            else:
                L.append("| %s | %s | %s | %s |" % (be, _fmt(b.get("median_us")), _fmt(b.get("p99_us")),
                                                     _fmt(b.get("min_us"))))
        g = p["goal"]
        L.append("\n- Goal *sim within 3x of the stock host plugin*: %s; sim/upstream median = %s, p99 = %s.\n" % (
            _goal(g["met"]), _fmt(g.get("sim_over_upstream_median")), _fmt(g.get("sim_over_upstream_p99"))))
        _notes(L, p)
        L.append("![launch](perf/launch.png)\n")

    # 4. bandwidth
    if not unavailable("bandwidth", "4. Transfer bandwidth"):
        p = parts["bandwidth"]
        L.append("### 4. Transfer bandwidth\n")
        L.append("%s. h2d = `target update to`, d2h = `target update from` on a buffer mapped once.\n" % p["unit"])
        L.append("| backend | size | h2d | d2h | memcpy | min(h2d,d2h)/memcpy |")
        L.append("|---|---|---|---|---|---|")
        for be in BANDWIDTH_BACKENDS:
            rows = p["backends"].get(be, {})
            if isinstance(rows, dict):
                L.append("| %s | not available: %s | | | | |" % (be, rows.get("unavailable", "?")))
                continue
            for r in rows:
                L.append("| %s | %s | %s | %s | %s | %s |" % (be, _size(r["size"]), _fmt(r["h2d_gbs"]), _fmt(r["d2h_gbs"]),
                                                              _fmt(r["memcpy_gbs"]),
                                                              _fmt(min(r["h2d_gbs"], r["d2h_gbs"]) / r["memcpy_gbs"])))
        g = p["goal"]
        L.append("\n- Goal *sim >= 50%% of memcpy from 1 MiB up*: %s; worst fraction = %s.\n" % (
            _goal(g["met"]), _fmt(g.get("worst_fraction_of_memcpy_from_1MiB"))))
        _notes(L, p)
        L.append("![bandwidth](perf/bandwidth.png)\n")

    # 5. image load
    if not unavailable("imageload", "5. Image load"):
        p = parts["imageload"]
        L.append("### 5. Image load\n")
        L.append("%s of one program that runs one kernel calling N device functions; ELF image on `sim`, "
                 "bitcode (`ompsim cc --image=ir`) on `sim-ir`.\n" % p["unit"])
        L.append("| device functions | ELF | bitcode JIT | JIT / ELF | first call, ELF (us) | first call, JIT (us) |")
        L.append("|---|---|---|---|---|---|")
        first = p.get("first_call_us", {})
        for n in p["sizes"]:
            L.append("| %d | %s | %s | %s | %s | %s |" % (
                n, _fmt(p["elf"].get(str(n)), 1), _fmt(p["ir"].get(str(n)), 1), _fmt(p["ir_over_elf"].get(str(n))),
                _fmt(first.get("elf", {}).get(str(n)), 1), _fmt(first.get("ir", {}).get(str(n)), 1)))
        L.append("\nFirst call: the first launch of a second kernel that calls a function nothing called before, "
                 "minus its second launch (on the bitcode image: the compile of that kernel and function on "
                 "first call).")
        g = p.get("goal")
        if g:
            L.append("\n- Goal *bitcode time to first kernel at most 1.5x ELF at 10 functions and 3x at 1000*: %s; "
                     "JIT/ELF = %s at 10, %s at 1000." % (_goal(g["met"]), _fmt(g["ir_over_elf_10"]),
                                                          _fmt(g["ir_over_elf_1000"])))
        for image in ("elf", "ir"):
            if "unavailable" in p[image]:
                L.append("\n%s: not available: %s" % (image, p[image]["unavailable"]))
        _notes(L, p)
        L.append("\n![imageload](perf/imageload.png)\n")

    # 6. matrix
    if not unavailable("matrix", "6. Matrix wall time"):
        p = parts["matrix"]
        L.append("### 6. Matrix wall time\n")
        L.append("| run | wall (s) | exit | pytest summary |")
        L.append("|---|---|---|---|")
        for label, r in p["runs"].items():
            L.append("| %s | %.1f | %d | %s |" % (label, r["wall_s"], r["exit"], r["summary"]))
        L.append("\nserial / xdist -n 2 = %s.\n" % _fmt(p.get("serial_over_xdist")))

    # 7. concurrency
    if not unavailable("concurrency", "7. Concurrent launches"):
        p = parts["concurrency"]
        L.append("### 7. Concurrent launches\n")
        L.append("%s; every host thread launches its share of small `nowait` regions with a `depend` chain on "
                 "its own mapped buffer. `sim-2dev` spreads the threads over 2 sim devices.\n" % p["unit"])
        L.append("| run | " + " | ".join("%d threads" % t for t in p["threads"]) + " |")
        L.append("|---|" + "---|" * len(p["threads"]))
        for label, _, _ in CONCURRENCY_RUNS:
            r = p["runs"].get(label, {})
            if "unavailable" in r:
                L.append("| %s | not available: %s |" % (label, r["unavailable"]) + " |" * (len(p["threads"]) - 1))
            else:
                L.append("| %s | %s |" % (label, " | ".join(_fmt(r.get(str(t)), 1) for t in p["threads"])))
        for label in ("sim", "sim-2dev"):
            g = p["goal"].get(label, {})
            L.append("\n- Goal *%s at most 2x ours-host at every thread count, never slower with more threads "
                     "than with one*: %s; worst %s/ours-host = %s, worst (n threads)/(1 thread) = %s." % (
                         label, _goal(g.get("met")), label, _fmt(g.get("worst_over_ours_host")),
                         _fmt(g.get("worst_over_one_thread"))))
        L.append("")
        _notes(L, p)

    # 8. devices
    if not unavailable("devices", "8. Many devices"):
        p = parts["devices"]
        L.append("### 8. Many devices\n")
        L.append("%s. RSS counts shared library pages each executor touched; PSS shares them out.\n" % p["unit"])
        L.append("| devices | start-up (ms) | RSS per executor, max (MiB) | median | PSS per executor, median (MiB) |")
        L.append("|---|---|---|---|---|")
        for n in p["counts"]:
            r, s_ = p["rss_kib"].get(str(n), {}), p["pss_kib"].get(str(n), {})
            L.append("| %d | %s | %s | %s | %s |" % (
                n, _fmt(p["startup_ms"].get(str(n)), 1), _fmt(r.get("max", 0) / 1024.0 if r else None, 1),
                _fmt(r.get("median", 0) / 1024.0 if r else None, 1),
                _fmt(s_.get("median", 0) / 1024.0 if s_ else None, 1)))
        g = p["goal"]
        L.append("\n- Goal *16 devices: start-up under 1 s, each idle executor at most 16 MiB resident*: %s; "
                 "start-up %s ms, largest executor %s MiB.\n" % (_goal(g["met"]), _fmt(g["startup_ms_16"], 1),
                                                                _fmt(g["max_rss_mib_16"], 1)))
    return "\n".join(L) + "\n"


def insert_section(doc_text, section):
    """Replaces what lies between the bench markers (appending them if absent)."""
    block = BEGIN + "\n" + section + END
    if BEGIN in doc_text and END in doc_text and doc_text.index(BEGIN) < doc_text.index(END):
        head = doc_text[:doc_text.index(BEGIN)]
        tail = doc_text[doc_text.index(END) + len(END):]
        return head + block + tail
    return doc_text.rstrip("\n") + "\n\n" + block + "\n"


def plot(res, out_dir):
    """PNG plots of the parts that ran. Returns the files written (none without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("plots: not available: matplotlib not importable from %s" % sys.executable)
        return []
    written = []
    parts = res.get("parts", {})

    def save(fig, name):
        path = os.path.join(out_dir, name)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)

    p = parts.get("lookup")
    if p and "rows" in p:
        fig, axes = plt.subplots(1, len(LOOKUP_PATTERNS), figsize=(16, 4), sharey=True)
        for ax, pat in zip(axes, LOOKUP_PATTERNS):
            for impl in LOOKUP_IMPLS:
                pts = sorted((r["size"], r["ns"]) for r in p["rows"] if r["impl"] == impl and r["pattern"] == pat)
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=impl)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(pat)
            ax.set_xlabel("table entries")
        axes[0].set_ylabel("ns per lookup (cpu)")
        axes[0].legend()
        save(fig, "lookup.png")
    p = parts.get("registration")
    if p and "backends" in p:
        fig, ax = plt.subplots(figsize=(6, 4))
        for be, vals in p["backends"].items():
            pts = [(n, vals[str(n)]) for n in p["counts"] if str(n) in vals]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=be)
        ax.set_xscale("log")
        ax.set_xlabel("indirect functions")
        ax.set_ylabel("ms over 0-function program")
        ax.legend()
        save(fig, "registration.png")
    p = parts.get("launch")
    if p and "backends" in p:
        fig, ax = plt.subplots(figsize=(6, 4))
        names = [b for b in LAUNCH_BACKENDS if "median_us" in p["backends"].get(b, {})]
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], [p["backends"][b]["median_us"] for b in names], 0.4, label="median")
        ax.bar([x + 0.2 for x in xs], [p["backends"][b]["p99_us"] for b in names], 0.4, label="p99")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names)
        ax.set_yscale("log")
        ax.set_ylabel("us per empty target region")
        ax.legend()
        save(fig, "launch.png")
    p = parts.get("bandwidth")
    if p and "backends" in p:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        memcpy_drawn = False
        for be, rows in p["backends"].items():
            if not isinstance(rows, list):
                continue
            xs = [r["size"] for r in rows]
            ax.plot(xs, [r["h2d_gbs"] for r in rows], marker="o", label=be + " h2d")
            ax.plot(xs, [r["d2h_gbs"] for r in rows], marker="s", label=be + " d2h")
            if not memcpy_drawn:
                ax.plot(xs, [r["memcpy_gbs"] for r in rows], "k--", label="memcpy")
                memcpy_drawn = True
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes")
        ax.set_ylabel("GB/s")
        ax.legend(fontsize=7)
        save(fig, "bandwidth.png")
    p = parts.get("imageload")
    if p and "sizes" in p:
        fig, ax = plt.subplots(figsize=(6, 4))
        for image in ("elf", "ir"):
            pts = [(n, p[image][str(n)]) for n in p["sizes"] if str(n) in p[image]]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=image)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("device functions")
        ax.set_ylabel("ms to first kernel")
        ax.legend()
        save(fig, "imageload.png")
    return written


RUNNERS = {"lookup": bench_lookup, "registration": bench_registration, "launch": bench_launch,
           "bandwidth": bench_bandwidth, "imageload": bench_imageload, "matrix": bench_matrix,
           "concurrency": bench_concurrency, "devices": bench_devices}


def main(args):
    wanted = PARTS
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        bad = [w for w in wanted if w not in PARTS]
        if bad:
            sys.stderr.write("ompsim: bench --only: unknown part %s (choose from %s)\n" % (bad[0], ",".join(PARTS)))
            return 2
    if args.skip_matrix and "matrix" in wanted:
        wanted = [w for w in wanted if w != "matrix"]
    if not args.no_build:
        paths.ensure_built()
    os.makedirs(args.out, exist_ok=True)
    results_path = os.path.join(args.out, "results.json")
    # Parts not run this time keep their previous results (with their own date).
    previous = {}
    if os.path.exists(results_path):
        try:
            with open(results_path) as f:
                previous = json.load(f).get("parts", {})
        except (OSError, ValueError):
            previous = {}
    res = {"machine": machine(), "quick": args.quick, "build_dir": os.path.relpath(paths.BUILD, paths.ROOT),
           "parts": {k: v for k, v in previous.items() if k in PARTS and k not in wanted}}
    for name in wanted:
        say("%s ..." % name)
        t0 = time.perf_counter()
        try:
            part = RUNNERS[name](args.quick)
        except Unavailable as e:
            part = {"unavailable": str(e)}
            say("%s: not available: %s" % (name, e))
        part["measured"] = time.strftime("%Y-%m-%d %H:%M:%S")
        part["quick"] = args.quick
        res["parts"][name] = part
        say("%s done in %.0fs" % (name, time.perf_counter() - t0))
        with open(results_path, "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
    plot(res, args.out)
    section = render_markdown(res)
    doc_text = open(args.doc).read() if os.path.exists(args.doc) else "# Performance\n"
    with open(args.doc, "w") as f:
        f.write(insert_section(doc_text, section))
    say("results in %s, table in %s" % (results_path, args.doc))
    print(section)
    return 0
