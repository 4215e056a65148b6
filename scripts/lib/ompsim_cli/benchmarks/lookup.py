"""Benchmark part 1: device translate lookups (ns/lookup) against binary search and unordered_map."""

import json
import os
import shutil
import subprocess
import tempfile

from ompsim_base import paths
from .common import Unavailable


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
