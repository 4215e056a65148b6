"""Benchmark part 3: empty target region latency, median and p99, per backend."""

from .common import TIMING_C, Unavailable, backend_env, compile_program, parse_kv, ratio, run_program, say


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
    out["goal"] = launch_goal(sim, up)
    return out


#: The goal: sim's median at most this many times stock's (host-upstream) ...
LAUNCH_MEDIAN_GOAL = 1.5
#: ... and its p99 at most this many times stock's p99.
LAUNCH_P99_GOAL = 2.0


def launch_goal(sim, up):
    """sim against host-upstream: met when the median ratio is <= 1.5 and the
    p99 ratio <= 2; None when either backend has no numbers."""
    med = ratio(sim.get("median_us"), up.get("median_us"))
    p99 = ratio(sim.get("p99_us"), up.get("p99_us"))
    met = None if med is None or p99 is None else med <= LAUNCH_MEDIAN_GOAL and p99 <= LAUNCH_P99_GOAL
    return {"met": met, "sim_over_upstream_median": med, "sim_over_upstream_p99": p99}
