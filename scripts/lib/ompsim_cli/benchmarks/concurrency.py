"""Benchmark part 7: 1/2/4/8 host threads launching nowait/depend regions, sim against ours-host."""

import statistics
from .common import TIMING_C, Unavailable, backend_env, compile_program, parse_kv, ratio, run_program, say


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
#: (label, backend, devices, extra environment): ours-host has one device, so
#: both sim rows compare with it; host-upstream (stock libomptarget and its host
#: plugin) shows what libomp's task machinery costs without any ompsim code.
CONCURRENCY_RUNS = [("sim", "sim", 1, {}), ("sim-2dev", "sim", 2, {}), ("ours-host", "ours-host", 1, {}),
                    ("host-upstream", "host-upstream", 1, {})]
#: Diagnostic rows: the same program under libomp settings that change how its
#: threads wait (the goals are judged on the default environment only). A
#: `target nowait` region is a hidden helper task: LIBOMP_USE_HIDDEN_HELPER_TASK=0
#: makes it an ordinary task that the thread waiting in `taskwait` runs itself.
CONCURRENCY_DIAGNOSTIC_ENVS = [("OMP_WAIT_POLICY=passive", {"OMP_WAIT_POLICY": "passive"}),
                               ("KMP_BLOCKTIME=0", {"KMP_BLOCKTIME": "0"}),
                               ("LIBOMP_NUM_HIDDEN_HELPER_THREADS=1", {"LIBOMP_NUM_HIDDEN_HELPER_THREADS": "1"}),
                               ("LIBOMP_USE_HIDDEN_HELPER_TASK=0", {"LIBOMP_USE_HIDDEN_HELPER_TASK": "0"})]
CONCURRENCY_DIAGNOSTIC_RUNS = [("%s, %s (diagnostic)" % (be, what), be, 1, env)
                               for what, env in CONCURRENCY_DIAGNOSTIC_ENVS
                               for be in ("ours-host", "host-upstream")] + [
    ("sim, %s (diagnostic)" % CONCURRENCY_DIAGNOSTIC_ENVS[-1][0], "sim", 1, CONCURRENCY_DIAGNOSTIC_ENVS[-1][1])]


def bench_concurrency(quick):
    exe = compile_program("concurrency", CONCURRENCY_SOURCE, ["--translate=native"])
    total = 800 if quick else 1600
    reps = 3 if quick else 5
    out = {"threads": CONCURRENCY_THREADS, "total": total, "runs": {},
           "unit": "ms wall for %d nowait target regions in all (median of %d runs), image load excluded" % (total, reps)}
    diagnostic_reps = max(1, reps // 2)
    out["diagnostic_reps"] = diagnostic_reps
    runs = [(r, reps) for r in CONCURRENCY_RUNS] + [(r, diagnostic_reps) for r in CONCURRENCY_DIAGNOSTIC_RUNS]
    for (label, be, devices, extra), n_reps in runs:
        try:
            env = backend_env(be)
            if devices > 1:
                env["OMPSIM_NUM_DEVICES"] = str(devices)
            env.update(extra)
            walls = {t: [] for t in CONCURRENCY_THREADS}
            for _ in range(n_reps):
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
