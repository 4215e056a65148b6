"""`ompsim bench [--quick] [--no-build] [--skip-matrix] [--only PARTS] [--program NAME]`: ompsim's benchmarks.

Runs its measurements side by side in one run and reports ratios (absolute
times on a shared 2-core machine are noisy; ratios taken in the same run are
what the goals are stated in):

  lookup        device translate (ns/lookup) vs binary search and unordered_map
  registration  __tgt_register_lib to a ready table, 1Ki/10Ki/100Ki indirect functions
  launch        empty target region latency, median and p99, per backend
  bandwidth     host<->device transfers 4KiB..256MiB on sim vs memcpy
  imageload     ELF image vs bitcode JIT, time to first kernel by program size
  matrix        conformance matrix wall time, serial vs pytest-xdist -n 2
  concurrency   1/2/4/8 host threads launching nowait/depend regions, sim vs ours-host and stock
  devices       16 sim devices in one process: start-up, and memory of each idle executor
  matrixcolumns run time of the matrix's sim/pass column vs its host-upstream/native column
                (same programs, compile time excluded)
  gpuimages     GPU images on sim (sim-nvptx, sim-amdgcn) vs the x86 images of the same programs:
                a 1 Mi-element loop, the first kernel with a warm JIT cache, 1000 barriers
  gpuchecks     the GPU checks' cost: a GPU image on sim-nvptx under OMPSIM_CHECK=1 vs without
                (a loop, a team-shared tile with barriers, a warp scan)

A part whose prerequisites are missing prints `not available: <why>` and is
recorded as such; no number is ever made up. Results go to docs/perf/results.json,
plots to docs/perf/*.png, and the generated table into docs/performance.md
between the `<!-- bench:begin -->` / `<!-- bench:end -->` markers.
"""

import json
import os
import platform
import sys
import time

from ompsim_base import paths
from .benchmarks.common import KiB, MiB, Unavailable, ratio, say
from .benchmarks.lookup import (LOOKUP_BASELINES, LOOKUP_BSEARCH, LOOKUP_COLUMNS, LOOKUP_IMPLS, LOOKUP_OURS,
                                LOOKUP_PATTERNS, LOOKUP_SIZES, bench_lookup)
from .benchmarks.registration import REG_BACKENDS, bench_registration
from .benchmarks.launch import LAUNCH_BACKENDS, bench_launch
from .benchmarks.bandwidth import BANDWIDTH_BACKENDS, bench_bandwidth
from .benchmarks.imageload import bench_imageload
from .benchmarks.matrix import bench_matrix
from .benchmarks.concurrency import CONCURRENCY_DIAGNOSTIC_RUNS, CONCURRENCY_GOALS, CONCURRENCY_RUNS, bench_concurrency
from .benchmarks.devices import bench_devices
from .benchmarks.matrixcolumns import bench_matrixcolumns
from .benchmarks.gpuimages import (BARRIER_GOAL_S, FIRST_KERNEL_GOAL, LOOP_GOAL, bench_gpuimages)
from .benchmarks.gpuchecks import KERNELS as CHECK_KERNELS, bench_gpuchecks

PARTS = ["lookup", "registration", "launch", "bandwidth", "imageload", "matrix", "concurrency", "devices", "matrixcolumns",
         "gpuimages", "gpuchecks"]
#: The parts that run the conformance matrix (--skip-matrix, --program).
MATRIX_PARTS = ["matrix", "matrixcolumns"]
# An installed tree is read-only: there the results go to ./ompsim-bench.
DOC = os.path.join(paths.output_dir("ompsim-bench") or os.path.join(paths.ROOT, "docs"), "performance.md")
PERF_DIR = paths.output_dir(os.path.join("ompsim-bench", "perf")) or os.path.join(paths.ROOT, "docs", "perf")
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def register(sub):
    p = sub.add_parser("bench", help="run the benchmarks (ratios side by side in one run) and update docs/performance.md",
                       epilog="example: ompsim bench --quick --only launch,bandwidth",
                       description=__doc__, formatter_class=_raw())
    p.add_argument("--quick", action="store_true",
                   help="shorter runs: registration at 1Ki/10Ki only, fewer repetitions")
    p.add_argument("--no-build", action="store_true", help="do not run scripts/setup first")
    p.add_argument("--skip-matrix", action="store_true", help="skip the (long) parts that run the conformance matrix: "
                   + ", ".join(MATRIX_PARTS))
    p.add_argument("--program", action="append", metavar="NAME",
                   help="matrix parts: only conformance programs whose name contains NAME (repeatable)")
    p.add_argument("--only", metavar="PARTS", help="comma list of parts: " + ",".join(PARTS))
    p.add_argument("--out", default=PERF_DIR, metavar="DIR", help="results.json and plots (default docs/perf)")
    p.add_argument("--doc", default=DOC, metavar="MD", help="Markdown file to update (default docs/performance.md)")
    p.set_defaults(func=main)


def _raw():
    import argparse
    return argparse.RawDescriptionHelpFormatter


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


def _measured(v):
    """A figure in ms, or why it was not measured (a part's {"unavailable": why})."""
    return "not available: %s" % v["unavailable"] if isinstance(v, dict) else _fmt(v, 3)


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
        L.append("\n- Goal *sim's median at most 1.5x and its p99 at most 2x the stock host plugin's*: %s; "
                 "sim/upstream median = %s, p99 = %s.\n" % (
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
        L.append("| device functions | ELF | bitcode, cold | cold / ELF | bitcode, warm | warm / ELF "
                 "| first call, ELF (us) | first call, JIT (us) |")
        L.append("|---|---|---|---|---|---|---|---|")
        first = p.get("first_call_us", {})
        cached = p.get("ir_cached", {})
        for n in p["sizes"]:
            L.append("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
                n, _fmt(p["elf"].get(str(n)), 1), _fmt(p["ir"].get(str(n)), 1), _fmt(p["ir_over_elf"].get(str(n))),
                _fmt(cached.get(str(n)), 1), _fmt(p.get("ir_cached_over_elf", {}).get(str(n))),
                _fmt(first.get("elf", {}).get(str(n)), 1), _fmt(first.get("ir", {}).get(str(n)), 1)))
        L.append("\nCold: each run with an empty JIT cache folder (the image is compiled, and its code kept). "
                 "Warm: the folder filled by an earlier run (the image is loaded lazily and its code read back: "
                 "no body parsed, no code generated). First call: the first launch of a second kernel that calls "
                 "a function nothing called before, minus its second launch (on the cold bitcode image: the "
                 "compile of that kernel and function on first call).")
        g = p.get("goal")
        if g:
            L.append("\n- Goal *bitcode cold at most 1.5x ELF at 10 functions and 3x at 1000*: %s; "
                     "cold/ELF = %s at 10, %s at 1000." % (_goal(g["met"]), _fmt(g["ir_over_elf_10"]),
                                                           _fmt(g["ir_over_elf_1000"])))
        g = p.get("goal_warm")
        if g:
            L.append("- Goal *bitcode warm (JIT cache filled) at most 1.5x ELF at 1000 functions*: %s; "
                     "warm/ELF = %s at 1000." % (_goal(g["met"]), _fmt(g["ir_cached_over_elf_1000"])))
        for image in ("elf", "ir", "ir_cached"):
            if "unavailable" in p.get(image, {}):
                L.append("\n%s: not available: %s" % ({"ir_cached": "warm bitcode"}.get(image, image),
                                                      p[image]["unavailable"]))
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
        L.append("\nserial / xdist -n 2 = %s; warm / cold (xdist -n 2) = %s.\n"
                 % (_fmt(p.get("serial_over_xdist")), _fmt(p.get("warm_over_cold"))))

    # 7. concurrency
    if not unavailable("concurrency", "7. Concurrent launches"):
        p = parts["concurrency"]
        L.append("### 7. Concurrent launches\n")
        L.append("%s; every host thread launches its share of small `nowait` regions with a `depend` chain on "
                 "its own mapped buffer. `sim-2dev` spreads the threads over 2 sim devices (thread t on device t %% 2). "
                 "Rows run interleaved (repetition, thread count, row), so compared rows see the same load.\n" % p["unit"])
        L.append("| run | " + " | ".join("%d threads" % t for t in p["threads"]) + " |")
        L.append("|---|" + "---|" * len(p["threads"]))
        for label, _, _, _ in CONCURRENCY_RUNS + CONCURRENCY_DIAGNOSTIC_RUNS:
            if label not in p["runs"]:
                continue
            r = p["runs"][label]
            if "unavailable" in r:
                L.append("| %s | not available: %s |" % (label, r["unavailable"]) + " |" * (len(p["threads"]) - 1))
            else:
                L.append("| %s | %s |" % (label, " | ".join(_fmt(r.get(str(t)), 1) for t in p["threads"])))
        L.append("\nRatios to the reference in the same run (the goals):\n")
        L.append("| ratio | " + " | ".join("%d threads" % t for t in p["threads"]) + " | goal |")
        L.append("|---|" + "---|" * (len(p["threads"]) + 1))
        for label, ref, bound in CONCURRENCY_GOALS:
            g = p["goal"].get(label, {})
            over = g.get("over_reference", {})
            L.append("| %s / %s | %s | at most %sx: %s |" % (
                label, ref, " | ".join(_fmt(over.get(str(t))) for t in p["threads"]), _fmt(bound, 1),
                _goal(g.get("met"))))
        if any(label in p["runs"] for label, _, _, _ in CONCURRENCY_DIAGNOSTIC_RUNS):
            L.append("\n(diagnostic) rows run the same program under other libomp settings, or without ompsim's "
                     "scheduler slice for libomp's hidden helper threads (median of %s runs); "
                     "no goal is judged on them." % p.get("diagnostic_reps", "?"))
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

    # 9. matrix columns
    if not unavailable("matrixcolumns", "9. Matrix columns: sim/pass against host-upstream/native"):
        p = parts["matrixcolumns"]
        sim, upstream = p["columns"]
        L.append("### 9. Matrix columns: sim/pass against host-upstream/native\n")
        L.append("Run time of the conformance programs that ran in both columns, as the matrix harness runs "
                 "them: %s; columns alternated program by program.\n" % p["unit"])
        L.append("| column | programs | run time, sum (s) |")
        L.append("|---|---|---|")
        for col in p["columns"]:
            L.append("| %s | %d | %s |" % (col, len(p["programs"]), _fmt(p["sum_s"].get(col), 3)))
        L.append("\n%s / %s = %s.\n" % (sim, upstream, _fmt(p["goal"]["ratio"])))
        if p["top"]:
            L.append("Highest %s / %s per program:\n" % (sim, upstream))
            L.append("| program | %s (ms) | %s (ms) | ratio | outcomes |" % (sim, upstream))
            L.append("|---|---|---|---|---|")
            for name in p["top"]:
                r = p["programs"][name]
                L.append("| %s | %s | %s | %s | %s |" % (name, _fmt(r[sim], 1), _fmt(r[upstream], 1), _fmt(r["ratio"]),
                                                         " / ".join(r["outcomes"][c] for c in p["columns"])))
            L.append("")
        if p["excluded"]:
            L.append("Not compared (%d): %s.\n" % (len(p["excluded"]), "; ".join(
                "%s (%s)" % (n, why) for n, why in sorted(p["excluded"].items()))))
        g = p["goal"]
        L.append("- Goal *sim/pass at most %sx host-upstream/native, compile time excluded*: %s; ratio = %s.\n" % (
            _fmt(g["limit"], 1), _goal(g["met"]), _fmt(g["ratio"])))
    # 10. GPU images
    if not unavailable("gpuimages", "10. GPU images on sim"):
        p = parts["gpuimages"]
        L.append("### 10. GPU images on sim\n")
        L.append("The same programs built for the host-offload target and for a GPU (`ompsim cc --gpu=sm_90` "
                 "or `gfx90a`, docs/gpu-images.md), run on sim; %s.\n" % p["unit"])

        columns = ("sim", "sim-ir", "sim-nvptx", "sim-amdgcn", "sim-nvptx-fibers", "host-upstream")
        L.append("| figure | " + " | ".join(["sim (x86 ELF)", "sim-ir (x86 bitcode)", "sim-nvptx", "sim-amdgcn",
                                            "sim-nvptx, fibers", "stock (x86 ELF)"]) + " |")
        L.append("|---|---|---|---|---|---|---|")
        for key, label in (("loop", "1 Mi-element loop, median of 10 launches"),
                           ("generic", "generic kernel, 256 teams' parallel loops, median of 10 launches"),
                           ("reduction", "1 Mi-element sum (`reduction(+ : s)`), median of 10 launches"),
                           ("tile", "team-local tile stencil, 4096 teams of 256, median of 10 launches"),
                           ("first_kernel", "first kernel, JIT cache warm"),
                           ("barriers", "1000 barriers, one team of 1024 threads"),
                           ("block_barriers", "1000 block barriers, one ompx_bare block of 1024 threads")):
            row = p.get(key, {})
            L.append("| %s | %s |" % (label, " | ".join(_measured(row[b]) if b in row else "" for b in columns)))
        g = p["goal"]
        nv = p.get("loop", {}).get("sim-nvptx")
        per_thread = _fmt(nv * 1e6 / (3200 * 128), 0) if isinstance(nv, (int, float)) else "n/a"
        L.append("\n- Goal *a GPU image's loop at most %sx the x86 image's*: %s; sim-nvptx/sim = %s, "
                 "sim-amdgcn/sim = %s. The GPU image runs stock's grid (3200 blocks of 128 threads on "
                 "nvptx64, 440 of 256 on amdgcn): 409,600 GPU threads (%s ns a thread on sim-nvptx). Each "
                 "block runs as loops over its threads (docs/gpu-images.md): the kernel's start, end and "
                 "distribute schedule once, on thread 0, and for each chunk a call of the region and its "
                 "worksharing schedule per thread; with fibers (OMPSIM_GPU_BLOCK_LOOPS=0) every thread is a "
                 "fiber that runs all of it and meets a barrier per region (sim-nvptx fibers/loops = %s). The "
                 "x86 image runs each of a few team threads' share as one vectorized loop." % (
                     _fmt(LOOP_GOAL, 0), _goal(g["loop_met"]), _fmt(g["loop_nvptx_over_x86"]),
                     _fmt(g["loop_amdgcn_over_x86"]), per_thread, _fmt(g.get("loop_fibers_over_loops"))))
        L.append("- The loop as a sum: sim-nvptx/sim = %s, sim-nvptx/stock = %s (the loop: %s). Each chunk's "
                 "region ends in a parallel reduction, whose threads run in rounds (its two barriers suspend "
                 "them; sim-nvptx fibers/rounds = %s)." % (
                     _fmt(g.get("reduction_nvptx_over_x86")), _fmt(g.get("reduction_nvptx_over_stock")),
                     _fmt(g.get("loop_nvptx_over_stock")), _fmt(g.get("reduction_fibers_over_rounds"))))
        L.append("- The tile stencil (HeCBench's form: a team-local array, a parallel region that fills it, "
                 "barriers, neighbours read): its region's threads run in rounds (sim-nvptx fibers/rounds = %s); "
                 "a run whose result differs from sim-nvptx's gives no figure." % _fmt(g.get("tile_fibers_over_rounds")))
        L.append("- Goal *its first kernel with a warm JIT cache at most %sx the x86 bitcode image's*: %s; "
                 "sim-nvptx/sim-ir = %s." % (_fmt(FIRST_KERNEL_GOAL, 0), _goal(g["first_kernel_met"]),
                                             _fmt(g["first_kernel_gpu_over_ir"])))
        L.append("- Goal *1000 barriers of a 1024-thread team at most %s s a launch*: %s; sim-nvptx took %s s "
                 "(after a warm-up launch). A GPU image's team is a block of 1024 threads, which run in "
                 "rounds: each a coroutine the barriers suspend (sim-nvptx fibers/rounds = %s); the x86 "
                 "image's team is libomp's 1024 OS threads on this machine's cores." % (
                     _fmt(BARRIER_GOAL_S, 2), _goal(g["barriers_met"]), _fmt(g["barriers_nvptx_s"], 3),
                     _fmt(g.get("barriers_fibers_over_rounds"))))
        L.append("- The same goal for a block barrier (`ompx_sync_block`) of an `ompx_bare` kernel: %s; "
                 "sim-nvptx took %s s (fibers/rounds = %s).\n" % (
                     _goal(g.get("block_barriers_met")), _fmt(g.get("block_barriers_nvptx_s"), 3),
                     _fmt(g.get("block_barriers_fibers_over_rounds"))))
    # 11. The GPU checks' cost
    if not unavailable("gpuchecks", "11. The GPU checks' cost"):
        p = parts["gpuchecks"]
        L.append("### 11. The GPU checks' cost\n")
        L.append("A GPU image (`--gpu=sm_90`) on sim-nvptx under the checker (`OMPSIM_CHECK=1`, docs/gpu-checks.md: "
                 "each access of the program's code checked, a grid's blocks one at a time) and without; %s per "
                 "launch, median of the launches after a warm-up one.\n" % p["unit"])

        L.append("| kernel | sim-nvptx | sim-nvptx, checked | ratio |")
        L.append("|---|---|---|---|")
        g = p["goal"]
        for name, _, label in CHECK_KERNELS:
            L.append("| %s | %s | %s | %s |" % (label, _measured(p["plain"].get(name, {"unavailable": "not run"})),
                                                _measured(p["checked"].get(name, {"unavailable": "not run"})),
                                                _fmt(g["ratios"].get(name))))
        L.append("\n- Goal *the checker at most %sx plain sim-nvptx* (compute-sanitizer's racecheck costs 10-100x "
                 "on a GPU): %s; worst ratio = %s. Under the checker a grid's blocks run one at a time on one "
                 "device thread (plain sim-nvptx runs one per CPU), which is up to %dx of each ratio on this "
                 "machine's %d cores.\n" % (_fmt(g["limit"], 0), _goal(g["met"]), _fmt(g["worst"]),
                                            os.cpu_count() or 1, os.cpu_count() or 1))
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
        for image, label in (("elf", "elf"), ("ir", "bitcode, cold"), ("ir_cached", "bitcode, warm")):
            vals = p.get(image, {})
            pts = [(n, vals[str(n)]) for n in p["sizes"] if str(n) in vals]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("device functions")
        ax.set_ylabel("ms to first kernel")
        ax.legend()
        save(fig, "imageload.png")
    return written


RUNNERS = {"lookup": bench_lookup, "registration": bench_registration, "launch": bench_launch,
           "bandwidth": bench_bandwidth, "imageload": bench_imageload, "matrix": bench_matrix,
           "concurrency": bench_concurrency, "devices": bench_devices, "matrixcolumns": bench_matrixcolumns,
           "gpuimages": bench_gpuimages, "gpuchecks": bench_gpuchecks}


def main(args):
    wanted = PARTS
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        bad = [w for w in wanted if w not in PARTS]
        if bad:
            sys.stderr.write("ompsim: bench --only: unknown part %s (choose from %s)\n" % (bad[0], ",".join(PARTS)))
            return 2
    if args.skip_matrix:
        wanted = [w for w in wanted if w not in MATRIX_PARTS]
    if not args.no_build:
        paths.ensure_built(everything=True)
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
            part = RUNNERS[name](args.quick, **({"programs": args.program} if name in MATRIX_PARTS else {}))
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
    missing = parts_without_results(res)
    if missing and os.path.abspath(args.doc) == os.path.abspath(DOC):
        # The project's own page keeps every part's last figures: a partial run into a
        # fresh --out would replace the others with "not run".
        say("results in %s; %s left as it is: parts %s have no results in %s (run them too, or "
            "give --doc)" % (results_path, args.doc, ",".join(missing), args.out))
    else:
        doc_text = open(args.doc).read() if os.path.exists(args.doc) else "# Performance\n"
        with open(args.doc, "w") as f:
            f.write(insert_section(doc_text, section))
        say("results in %s, table in %s" % (results_path, args.doc))
    print(section)
    return 0


def parts_without_results(res):
    """The parts a results dict has nothing for, neither from this run nor an earlier one."""
    return [p for p in PARTS if p not in res.get("parts", {})]
