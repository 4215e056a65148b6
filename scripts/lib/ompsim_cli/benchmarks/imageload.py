"""Benchmark part 5: ELF image against bitcode JIT, time to first kernel by program size."""

import os
import statistics
import tempfile
from .common import TIMING_C, Unavailable, backend_env, compile_program, parse_kv, ratio, run_program, say


def imageload_source(n):
    # Unsigned arithmetic: with signed overflow (undefined behaviour) the ELF
    # and bitcode builds may legitimately compute different checksums, and the
    # part compares them.
    fns = "\n".join("""unsigned ompsim_bench_g%d(unsigned x) {
  unsigned s = x;
  for (unsigned k = 0; k < (x & 7) + %d; ++k) s = s * 31 + k * %d;
  return s;
}""" % (i, i % 5 + 2, i + 1) for i in range(n))
    calls = "\n".join("    s += ompsim_bench_g%d(s & 1023);" % i for i in range(n))
    # After the figure (done=1): a second kernel calls a function nothing ran
    # before; its first launch against its second is the cost of a first call
    # of a function not yet compiled (bitcode) or already loaded (ELF).
    return TIMING_C + """#pragma omp declare target
%s
unsigned ompsim_bench_late(unsigned x) {
  unsigned s = x;
  for (unsigned k = 0; k < (x & 7) + 3; ++k) s = s * 17 + k;
  return s;
}
#pragma omp end declare target
int main(void) {
  unsigned s = 1;
#pragma omp target map(tofrom : s)
  {
%s
  }
  printf("checksum=%%u done=1\\n", s);
  fflush(stdout);
  double t[2];
  for (int r = 0; r < 2; ++r) {
    double t0 = now_ns();
#pragma omp target map(tofrom : s)
    { s = ompsim_bench_late(s); }
    t[r] = now_ns() - t0;
  }
  printf("late_first_ns=%%.0f late_again_ns=%%.0f checksum2=%%u\\n", t[0], t[1], s);
  fflush(stdout);
  return 0;
}
""" % (fns, calls)


def bench_imageload(quick):
    # clang-22 -O2 needs minutes for the 1000-function kernel on 2 cores and
    # far longer beyond it, so 1000 is the largest size in both modes.
    sizes = [10, 100, 1000]
    reps = 3 if quick else 5
    # "ir" is the bitcode image cold (each run with an empty JIT cache folder:
    # compile, and keep the code); "ir_cached" is it warm (the folder filled
    # by an earlier run). Neither touches the user's own cache.
    out = {"sizes": sizes, "unit": "ms to first kernel (median time from spawn to the line printed after the kernel)", "elf": {}, "ir": {},
           "first_call_us": {"elf": {}, "ir": {}}}
    checksums = {}  # n -> {image: the kernel's result}
    # The three kinds of run alternate, size by size, so that each ratio
    # compares runs made under the same load (the machine is shared).
    kinds = [("elf", "sim", "elf"), ("ir", "sim-ir", "ir"), ("ir_cached", "sim-ir", "ir")]
    envs = {}
    for key, be, image in kinds:
        try:
            envs[key] = backend_env(be)
        except Unavailable as e:
            out[key] = {"unavailable": str(e)}
            say("image load (%s on %s): not available: %s" % (key, be, e))
    if "ir" in envs:
        out["ir_cached"] = {}
    with tempfile.TemporaryDirectory(prefix="ompsim-bench-jit-") as scratch:
        runs = [0]

        def fresh_cache(env):
            runs[0] += 1
            return dict(env, OMPSIM_JIT_CACHE=os.path.join(scratch, "cache-%d" % runs[0]))

        for n in sizes:
            exes, walls, firsts = {}, {}, {"elf": [], "ir": []}
            for key, be, image in kinds:
                if key not in envs or "unavailable" in out.get(key, {}):
                    continue
                try:
                    exes[key] = compile_program("image%d-%s" % (n, image), imageload_source(n),
                                                ["--translate=native", "--image=" + image])
                except Unavailable as e:
                    out[key] = {"unavailable": str(e)}
                    say("image load (%s on %s): not available: %s" % (key, be, e))
            # Warm: one run fills a cache folder that every timed warm run then reads.
            warm_env = fresh_cache(envs["ir_cached"]) if "ir_cached" in exes else None
            try:
                if warm_env:
                    run_program(exes["ir_cached"], [], warm_env)
                for _ in range(reps):
                    for key, be, image in kinds:
                        if key not in exes:
                            continue
                        # Cold runs (and ELF ones) each start with an empty cache folder.
                        env = warm_env if key == "ir_cached" else fresh_cache(envs[key])
                        text, wall, note = run_program(exes[key], [], env)
                        walls.setdefault(key, []).append(wall)
                        kv = parse_kv(text)
                        if key != "ir_cached":
                            checksums.setdefault(n, {})[image] = kv.get("checksum")
                            if "late_first_ns" in kv:
                                firsts[image].append((kv["late_first_ns"] - kv["late_again_ns"]) / 1e3)
                        if note:
                            out.setdefault("notes", {})[be] = note
            except Unavailable as e:
                for key in exes:
                    out[key] = {"unavailable": str(e)}
                say("image load (%d functions): not available: %s" % (n, e))
                break
            for key, ws in walls.items():
                out[key][str(n)] = statistics.median(ws) * 1e3
            for image, fs in firsts.items():
                if fs:
                    out["first_call_us"][image][str(n)] = statistics.median(fs)
    # Both builds run the same kernel: a different result is a wrong one.
    for n, by_image in sorted(checksums.items()):
        if len(by_image) == 2 and by_image["elf"] != by_image["ir"]:
            out.setdefault("notes", {})["checksum %d" % n] = (
                "the kernel's result differs: ELF image %s, bitcode image %s" % (by_image["elf"], by_image["ir"]))
            say("image load: %d functions: the ELF and bitcode images computed different results" % n)
    return imageload_goals(out)


def imageload_goals(out):
    """Adds the ratios and the goals to an imageload result: cold at most 1.5x ELF at 10 functions and 3x at
    1000; warm (the JIT cache filled) at most 1.5x ELF at 1000."""
    sizes = out["sizes"]
    out["ir_over_elf"] = {str(n): ratio(out["ir"].get(str(n)), out["elf"].get(str(n))) for n in sizes}
    out["ir_cached_over_elf"] = {str(n): ratio(out.get("ir_cached", {}).get(str(n)), out["elf"].get(str(n)))
                                 for n in sizes}
    r10, r1000 = out["ir_over_elf"].get("10"), out["ir_over_elf"].get("1000")
    w1000 = out["ir_cached_over_elf"].get("1000")
    out["goal"] = {"met": None if r10 is None or r1000 is None else r10 <= 1.5 and r1000 <= 3.0,
                   "ir_over_elf_10": r10, "ir_over_elf_1000": r1000,
                   "ir_cached_over_elf_10": out["ir_cached_over_elf"].get("10"),
                   "ir_cached_over_elf_1000": w1000}
    out["goal_warm"] = {"met": None if w1000 is None else w1000 <= 1.5, "ir_cached_over_elf_1000": w1000}
    return out
