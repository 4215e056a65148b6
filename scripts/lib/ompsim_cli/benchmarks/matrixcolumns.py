"""Benchmark part 9: run time of the matrix's sim/pass column against its host-upstream/native column.

Each cell runs through the conformance harness itself (`harness.runner.run_cell`: the
same build cache, environment, timeout and checks as `ompsim matrix`), and the figure is
the cell's run phase alone (`run_s` of its record: spawn to exit of the program, no
compile, no cache look-up). A first round builds every program once per translation and
is not counted; the measured rounds alternate which column runs first for each program,
so the two columns see the same machine load. Only programs whose run finished in both
columns (no skip, compile error or timeout in either) are compared.
"""

import os
import shutil
import statistics
import sys
import tempfile

from ompsim_base import backends, paths
from .common import Unavailable, ratio, say

SIM = ("sim", "pass")
UPSTREAM = ("host-upstream", "native")
COLUMNS = (SIM, UPSTREAM)
#: The goal: the sim/pass column's run time at most this many times host-upstream/native's.
GOAL_RATIO = 1.3
TOP = 5


def column_name(column):
    return "%s/%s" % column


def _harness():
    conf = os.path.join(paths.ROOT, "conformance")
    if not os.path.isdir(os.path.join(conf, "harness")):
        raise Unavailable("conformance/harness missing")
    if conf not in sys.path:
        sys.path.insert(0, conf)
    from harness import runner  # noqa: E402 (the harness lives beside its programs)
    from harness.header import discover  # noqa: E402
    return runner, discover


def _cache_root():
    """The matrix output folder of this part (its builds are in the compile cache, kept between runs)."""
    return (paths.output_dir(os.path.join("ompsim-bench", "matrix")) or
            os.path.join(paths.BUILD, "bench", "matrix"))


def bench_matrixcolumns(quick, programs=None):
    """`programs`: only conformance programs whose file name contains one of these."""
    runner, discover = _harness()
    for backend, _ in COLUMNS:
        why = backends.unavailable_reason(backend)
        if why:
            raise Unavailable("backend %s: %s" % (backend, why))
    found = discover(os.path.join(paths.ROOT, "conformance", "programs"))
    if programs:
        found = [p for p in found if any(w in os.path.basename(p) for w in programs)]
        if not found:
            raise Unavailable("no conformance program matches %s" % ", ".join(programs))
    rounds = 1 if quick else 3
    out_root = _cache_root()
    # run_s of every measured round, and the outcome of every round, per program and column.
    runs = {}
    outcomes = {}
    work = tempfile.mkdtemp(prefix="ompsim-bench-matrixcolumns-")
    try:
        for rnd in range(rounds + 1):
            say("matrixcolumns: %s, %d programs" % ("building and warming up" if rnd == 0 else
                                                   "round %d of %d" % (rnd, rounds), len(found)))
            for i, path in enumerate(found):
                order = COLUMNS if (i + rnd) % 2 == 0 else COLUMNS[::-1]
                for column in order:
                    cell = runner.Cell(path, *column)
                    cwd = tempfile.mkdtemp(dir=work)
                    _, record = runner.run_cell(cell, out_root, cwd)
                    shutil.rmtree(cwd, ignore_errors=True)
                    key = (cell.name, column_name(column))
                    outcomes.setdefault(key, []).append(record["outcome"])
                    if rnd > 0 and record.get("run_s") is not None:
                        runs.setdefault(key, []).append(record["run_s"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summarize(sorted({name for name, _ in outcomes}), runs, outcomes, rounds)


def summarize(names, runs, outcomes, rounds):
    """The part's results from the raw cells.

    `runs[(program, column)]`: run_s of each measured round where the program ran;
    `outcomes[(program, column)]`: the cell's outcome in every round (warm-up included).
    """
    columns = [column_name(c) for c in COLUMNS]
    sim, upstream = columns
    compared, excluded = {}, {}
    for name in names:
        why = []
        for col in columns:
            seen = outcomes.get((name, col), [])
            if "TIMEOUT" in seen:
                why.append("%s: TIMEOUT" % col)
            elif len(runs.get((name, col), [])) < rounds:
                # Skipped, not built, or (from a flaky build) not run in every round.
                why.append("%s: not run (%s)" % (col, "/".join(dict.fromkeys(seen)) or "no cell"))
        if why:
            excluded[name] = "; ".join(why)
            continue
        compared[name] = {col: statistics.median(runs[(name, col)]) * 1e3 for col in columns}
        compared[name]["outcomes"] = {col: outcomes[(name, col)][-1] for col in columns}
        compared[name]["ratio"] = ratio(compared[name][sim], compared[name][upstream])
    sums = {col: sum(v[col] for v in compared.values()) / 1e3 for col in columns}
    total = ratio(sums[sim], sums[upstream]) if compared else None
    top = sorted((n for n in compared if compared[n]["ratio"] is not None),
                 key=lambda n: compared[n]["ratio"], reverse=True)[:TOP]
    return {"unit": "run phase of each cell (median of %d measured round%s), compile time excluded"
                    % (rounds, "" if rounds == 1 else "s"),
            "columns": columns, "rounds": rounds, "programs": compared, "excluded": excluded,
            "sum_s": sums, "top": top,
            "goal": {"met": None if total is None else total <= GOAL_RATIO, "ratio": total,
                     "limit": GOAL_RATIO}}
