"""Benchmark part 2: __tgt_register_lib to a ready table with 1Ki/10Ki/100Ki indirect functions."""

import statistics
from .common import Unavailable, backend_env, compile_program, run_program, say


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
