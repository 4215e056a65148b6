"""Benchmark part 7: 1/2/4/8 host threads launching nowait/depend regions, sim and ours-host against stock."""

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
#: libomp's switch for hidden helper tasks: a `target nowait` region is a
#: hidden helper task by default; with 0 it is an ordinary task that a thread
#: of the team (the one waiting in `taskwait` included) runs itself.
HIDDEN_HELPER_OFF = {"LIBOMP_USE_HIDDEN_HELPER_TASK": "0"}
#: (label, backend, devices, extra environment). host-upstream (stock
#: libomptarget and its host plugin) is the reference every goal is a ratio
#: to; `sim-2dev` gives each pair of host threads 2 sim devices (thread t on
#: device t % 2).
CONCURRENCY_RUNS = [("sim", "sim", 1, {}), ("sim-2dev", "sim", 2, {}), ("ours-host", "ours-host", 1, {}),
                    ("host-upstream", "host-upstream", 1, {}),
                    ("sim, hidden helper tasks off", "sim", 1, HIDDEN_HELPER_OFF),
                    ("sim-2dev, hidden helper tasks off", "sim", 2, HIDDEN_HELPER_OFF),
                    ("ours-host, hidden helper tasks off", "ours-host", 1, HIDDEN_HELPER_OFF),
                    ("host-upstream, hidden helper tasks off", "host-upstream", 1, HIDDEN_HELPER_OFF)]
#: The goals: (run, reference run, at most this ratio at every thread count).
CONCURRENCY_GOALS = [("sim", "host-upstream", 1.5), ("sim-2dev", "host-upstream", 1.5),
                     ("sim, hidden helper tasks off", "host-upstream, hidden helper tasks off", 1.5),
                     ("sim-2dev, hidden helper tasks off", "host-upstream, hidden helper tasks off", 1.5),
                     ("ours-host", "host-upstream", 1.0)]
#: Diagnostic rows: the same program under libomp settings that change how its
#: threads wait (no goal is judged on them).
CONCURRENCY_DIAGNOSTIC_ENVS = [("OMP_WAIT_POLICY=passive", {"OMP_WAIT_POLICY": "passive"}),
                               ("KMP_BLOCKTIME=0", {"KMP_BLOCKTIME": "0"})]
CONCURRENCY_DIAGNOSTIC_RUNS = [("%s, %s (diagnostic)" % (be, what), be, 1, env)
                               for what, env in CONCURRENCY_DIAGNOSTIC_ENVS
                               for be in ("sim", "ours-host", "host-upstream")]
#: ompsim's backends without the short scheduler slice the runtime asks for
#: libomp's hidden helper threads (stock does not read the variable): what
#: that measure is worth, side by side with the default rows.
CONCURRENCY_DIAGNOSTIC_RUNS += [("%s, OMPSIM_HIDDEN_HELPER_SLICE_US=0 (diagnostic)" % be, be, 1,
                                 {"OMPSIM_HIDDEN_HELPER_SLICE_US": "0"}) for be in ("sim", "ours-host")]


def bench_concurrency(quick):
    exe = compile_program("concurrency", CONCURRENCY_SOURCE, ["--translate=native"])
    total = 800 if quick else 1600
    reps = 3 if quick else 5
    diagnostic_reps = max(1, reps // 2)
    out = {"threads": CONCURRENCY_THREADS, "total": total, "runs": {}, "diagnostic_reps": diagnostic_reps,
           "unit": "ms wall for %d nowait target regions in all (median of %d runs), image load excluded" % (total, reps)}
    envs, walls = {}, {}
    for label, be, devices, extra in CONCURRENCY_RUNS + CONCURRENCY_DIAGNOSTIC_RUNS:
        try:
            env = backend_env(be)
        except Unavailable as e:
            out["runs"][label] = {"unavailable": str(e)}
            say("concurrency (%s): not available: %s" % (label, e))
            continue
        if devices > 1:
            env["OMPSIM_NUM_DEVICES"] = str(devices)
        env.update(extra)
        envs[label] = (env, devices)
        walls[label] = {t: [] for t in CONCURRENCY_THREADS}
    diagnostic = {label for label, _, _, _ in CONCURRENCY_DIAGNOSTIC_RUNS}
    # Runs interleaved (repetition, thread count, then every row) so that the
    # rows compared by a goal see the same load of the machine.
    for rep in range(reps):
        for t in CONCURRENCY_THREADS:
            for label, (env, devices) in list(envs.items()):
                if label in diagnostic and rep >= diagnostic_reps:
                    continue
                try:
                    text, _, note = run_program(exe, [t, total, devices], env)
                    if note:
                        out.setdefault("notes", {})[label] = note
                    kv = parse_kv(text)
                    if "wall_ns" not in kv:
                        raise Unavailable("concurrency program printed no time: %r" % text.strip()[:200])
                    walls[label][t].append(kv["wall_ns"] / 1e6)
                except Unavailable as e:
                    out["runs"][label] = {"unavailable": str(e)}
                    say("concurrency (%s): not available: %s" % (label, e))
                    del envs[label]
    for label, w in walls.items():
        if label in envs:
            out["runs"][label] = {str(t): statistics.median(v) for t, v in w.items()}
    out["goal"] = concurrency_goal(out["runs"])
    return out


def concurrency_goal(runs):
    """Per goal of CONCURRENCY_GOALS: the run's ratio to its reference at each
    thread count; met when every ratio is at most the goal's bound (None when
    either run is missing)."""
    goal = {}
    for label, ref, bound in CONCURRENCY_GOALS:
        r, h = runs.get(label, {}), runs.get(ref, {})
        if not r or not h or "unavailable" in r or "unavailable" in h:
            goal[label] = {"reference": ref, "bound": bound, "met": None}
            continue
        over = {str(t): ratio(r[str(t)], h[str(t)]) for t in CONCURRENCY_THREADS}
        worst = max(over.values())
        goal[label] = {"reference": ref, "bound": bound, "over_reference": over, "worst_over_reference": worst,
                       "met": worst <= bound}
    return goal
