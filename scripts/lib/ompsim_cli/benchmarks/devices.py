"""Benchmark part 8: 16 sim devices in one process: start-up, and the memory of each idle executor."""

import statistics
import subprocess
import time
from .common import Unavailable, backend_env, compile_program


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
