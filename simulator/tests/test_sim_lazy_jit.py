"""Bitcode images on the simulated device compile each function on its first call.

The image's data is linked at load; a kernel, an indirect function or a vtable
slot compiles when device code first reaches it (through a stub whose address
is valid from the start), so a kernel that never runs is never compiled. The
programs check their own results; the `image` trace says what was compiled when.
"""
import json
import re
import subprocess

import pytest

from ompsim_base import backends

LAZY = r"""
#include <cstdio>
extern "C" void *__kmpc_target_translate_fptr(void *host_ptr);
#pragma omp declare target
int helper(int x) { return x + 3; }
int only_second(int x) { return x * 7 + 1; }
int only_indirect(int x) { return x * 11; }
int twice(int x) { return 2 * x; }
int never_called(int x) { return x - 100; }
struct Shape {
  virtual int area() const = 0;
};
struct Square : Shape {
  int s;
  Square(int s) : s(s) {}
  int area() const override { return s * s; }
};
struct Rect : Shape {
  int w, h;
  Rect(int w, int h) : w(w), h(h) {}
  int area() const override { return w * h; }
};
#pragma omp end declare target
#pragma omp declare target to(only_indirect, twice) indirect

enum { N = 64 };

int main(int argc, char **argv) {
  int a = 0, b = 0, c = 0, d = 0, same = 0, pick = argc > 1, bad = 0;
  int out[N];
  // Kernel 1: calls helper directly.
#pragma omp target map(from : a)
  { a = helper(1); }
  // Kernel 2: the first call of only_second.
#pragma omp target map(from : b)
  { b = only_second(2); }
  // Kernel 3: only_indirect is reached only through a host pointer.
  int (*fp)(int) = only_indirect;
#pragma omp target map(from : c, same)
  {
    c = fp(3);
    // The address device code takes is the one the host pointer translates to.
    same = __kmpc_target_translate_fptr((void *)fp) == (void *)&only_indirect;
  }
  // Kernel 4: a virtual call whose target depends on a mapped value.
#pragma omp target map(from : d) map(to : pick)
  {
    Square sq(5);
    Rect re(2, 3);
    Shape *s = pick ? (Shape *)&re : (Shape *)&sq;
    d = s->area();
  }
  // Kernel 5: every device thread makes the first call of twice at once.
  int (*gp)(int) = twice;
#pragma omp target teams distribute parallel for num_teams(2) map(from : out)
  for (int i = 0; i < N; ++i)
    out[i] = gp(i);
  // Kernel 6: never launched here (argc is at most 2).
  if (argc > 5) {
#pragma omp target map(from : a)
    { a = never_called(a); }
  }
  for (int i = 0; i < N; ++i)
    bad += out[i] != 2 * i;
  bad += (a != 4) + (b != 15) + (c != 33) + (d != (pick ? 6 : 25)) + (same != 1);
  std::printf("a=%d b=%d c=%d d=%d mismatches=%d\n", a, b, c, d, bad);
  return bad != 0;
}
"""


def run_traced(offload, exe, args, trace, level):
    why = backends.unavailable_reason("sim")
    if why:
        pytest.skip("backend sim unavailable: %s" % why)
    env = backends.environment("sim")
    env.update({"OMPSIM_TRACE": "image", "OMPSIM_TRACE_FILE": str(trace), "OMPSIM_JIT_OPT_LEVEL": level})
    r = subprocess.run([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       cwd=offload.tmp, timeout=300)
    events = [json.loads(l) for l in trace.read_text().splitlines() if l.strip()]
    return r, events


@pytest.mark.parametrize("level", ["0", "2"], ids=["codegen0", "codegen2"])
@pytest.mark.parametrize("pick", [[], ["rect"]], ids=["square", "rect"])
def test_functions_compile_on_first_call(offload, pick, level):
    exe = offload.compile(LAZY, name="lazy.cpp", translate="pass", image="ir")
    r, events = run_traced(offload, exe, pick, offload.tmp / "trace.jsonl", level)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mismatches=0" in r.stdout, r.stdout
    assert "d=%d" % (6 if pick else 25) in r.stdout, r.stdout
    assert [l for l in r.stderr.splitlines() if l.startswith("ompsim")] == [], r.stderr

    loads = [e["seq"] for e in events if e["event"] == "load" and e.get("kind") == "bitcode"]
    assert len(loads) == 1, events
    compiled = [(e["seq"], e["symbol"]) for e in events if e["event"] == "jit-compile"]
    after_load = [s for seq, s in compiled if seq > loads[0]]
    # Kernels compile when they are first launched: the five that run, never the sixth.
    kernels = [s for s in after_load if re.fullmatch(r"__omp_offloading_\w+_main_l\d+", s)]
    assert len(kernels) == 5, compiled
    assert not [s for seq, s in compiled if seq < loads[0] and s.startswith("__omp_offloading_") and "_main_l" in s]
    # Functions reached only through a pointer compile on their own first call,
    # after the load: their stubs were in the function-pointer table before.
    for fn in ("_Z13only_indirecti", "_Z5twicei"):
        assert fn in after_load, compiled
    assert "_Z12never_calledi" not in [s for _, s in compiled]
    # Only the vtable slot that runs is compiled.
    taken, other = ("_ZNK4Rect4areaEv", "_ZNK6Square4areaEv") if pick else ("_ZNK6Square4areaEv", "_ZNK4Rect4areaEv")
    assert taken in after_load, compiled
    assert other not in [s for _, s in compiled], compiled
    # Each function compiles once, however many device threads called it first.
    assert len(after_load) == len(set(after_load)), compiled


def rest_program(n=24):
    fns = "\n".join("__attribute__((noinline)) int g%d(int x) { return x * %d + %d; }" % (i, i % 5 + 2, i)
                     for i in range(n))
    calls = "\n".join("    s = g%d(s) & 0xffff;" % i for i in range(n))
    return r"""
#include <cstdio>
extern "C" void *__kmpc_target_translate_fptr(void *host_ptr);
#pragma omp declare target
%s
int ind(int x) { return x + 5; }
#pragma omp end declare target
#pragma omp declare target to(ind) indirect
int main() {
  int (*fp)(int) = ind;
  int s = 1, same = 0, viaPointer = 0;
#pragma omp target map(tofrom : s, same, viaPointer)
  {
%s
    same = __kmpc_target_translate_fptr((void *)fp) == (void *)&ind;
    viaPointer = fp(1);
  }
  int want = 1;
  for (int i = 0; i < %d; ++i) want = (want * (i %% 5 + 2) + i) & 0xffff;
  int bad = (s != want) + (same != 1) + (viaPointer != 6);
  std::printf("s=%%d same=%%d mismatches=%%d\n", s, same, bad);
  return bad != 0;
}
""" % (fns, calls, n)


def test_a_kernel_calling_most_of_the_image_compiles_it_at_once_keeping_pointers(offload):
    exe = offload.compile(rest_program(), name="rest.cpp", translate="pass", image="ir")
    r, events = run_traced(offload, exe, [], offload.tmp / "trace.jsonl", "0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mismatches=0" in r.stdout, r.stdout
    rest = [e for e in events if e["event"] == "jit-compile" and e.get("rest") == 1]
    # The kernel's partition held most of the image: the rest compiled in one
    # go, and a pointer taken on the device still equals the translated one.
    assert len(rest) == 1, [e for e in events if e["event"] == "jit-compile"]


def cache_files(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}


def test_a_cache_folder_keeps_compiled_code_for_the_next_run(offload):
    exe = offload.compile(rest_program(), name="cached.cpp", translate="pass", image="ir")
    cache = offload.tmp / "jit-cache" / "made-on-first-use"
    env = {"OMPSIM_JIT_CACHE": str(cache)}

    def run_checked():
        r = offload.run(exe, backend="sim", env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "mismatches=0" in r.stdout, r.stdout
        assert [l for l in r.stderr.splitlines() if l.startswith("ompsim")] == [], r.stderr

    run_checked()
    first = cache_files(cache)
    assert first and all(n.endswith(".o") for n in first), sorted(first)
    # The second run finds every object it needs: it writes nothing.
    run_checked()
    assert cache_files(cache) == first
    # A damaged object is compiled again, not linked, and its file rewritten.
    for name, (data, _) in first.items():
        (cache / name).write_bytes(data[:len(data) // 2])
    run_checked()
    assert {n: d for n, (d, _) in cache_files(cache).items()} == {n: d for n, (d, _) in first.items()}
    # Another code generation level is another object, never the level 0 one.
    env["OMPSIM_JIT_OPT_LEVEL"] = "2"
    run_checked()
    assert len(cache_files(cache)) == 2 * len(first), sorted(cache_files(cache))


def test_a_cache_folder_that_cannot_be_written_is_named_once_and_the_program_runs(offload):
    exe = offload.compile(rest_program(), name="uncached.cpp", translate="pass", image="ir")
    blocker = offload.tmp / "not-a-folder"
    blocker.write_text("a file where the cache folder would be\n")
    r = offload.run(exe, backend="sim", env={"OMPSIM_JIT_CACHE": str(blocker / "cache")})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mismatches=0" in r.stdout, r.stdout
    lines = [l for l in r.stderr.splitlines() if l.startswith("ompsim")]
    assert len(lines) == 1 and "OMPSIM_JIT_CACHE" in lines[0] and str(blocker) in lines[0], r.stderr


FAULT = r"""
#include <cstdio>
#pragma omp declare target
__attribute__((noinline)) int store_far(int *p, int x) { p[x] = 1; return x; }
__attribute__((noinline)) int second(int x) { return x + 1; }
#pragma omp end declare target
int main(int argc, char **argv) {
  int r = 0;
#pragma omp target map(tofrom : r)
  { r = second(argc); }
#pragma omp target map(tofrom : r)
  { r = store_far((int *)0x10, r); } /* page 0: never mapped, in any process */
  std::printf("r=%d\n", r);
  return 0;
}
"""


@pytest.mark.parametrize("cached", [False, True], ids=["compiled", "from-cache"])
def test_a_fault_in_lazily_compiled_code_names_the_function_as_written(offload, cached):
    exe = offload.compile(FAULT, name="fault.cpp", translate="pass", image="ir")
    env = {"OMPSIM_JIT_CACHE": str(offload.tmp / "cache")} if cached else {}
    if cached:
        offload.run(exe, backend="sim", env=env)  # fills the cache
    r = offload.run(exe, backend="sim", env=env)
    assert r.returncode != 0, r.stdout + r.stderr
    # The function compiled apart from the kernel that calls it keeps the
    # name it has in the source (not the one extraction gave it).
    lines = [l for l in r.stderr.splitlines() if l.startswith("ompsim")]
    assert len(lines) == 1, r.stderr
    assert re.search(r" from dev:store_far\(int\*, int\)( \(\.internalized\))?\+0x[0-9a-f]+ \(0x[0-9a-f]+\); "
                     r"note: ", lines[0]), lines[0]
