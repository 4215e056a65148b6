"""Benchmark part 4: host<->device transfers 4KiB..256MiB on sim against memcpy."""

from .common import KiB, MiB, TIMING_C, Unavailable, backend_env, compile_program, parse_kv, run_program, say


BANDWIDTH_SIZES = [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB]

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
