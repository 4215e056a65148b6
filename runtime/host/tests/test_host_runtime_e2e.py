"""End-to-end: real clang-22 offload programs on ompsim's runtime with the in-process host plugin."""
import os
import re
import subprocess

import pytest

from ompsim_base import paths

pytestmark = pytest.mark.e2e

CLANG = paths.tool("clang")
OFFLOAD_FLAGS = ["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1", "-g"]


def ompsim_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("ompsim:")]


def check_ok(r):
    assert r.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (r.returncode, r.stdout, r.stderr)
    assert ompsim_lines(r.stderr) == [], r.stderr


CAPTURED_FPTR = r"""
#include <stdio.h>
int counter = 0;
#pragma omp declare target to(counter)
int add1(int x) { counter += 1; return x + 1; }
int mul2(int x) { counter += 100; return x * 2; }
#pragma omp declare target to(add1, mul2) indirect
int main(int argc, char **argv) {
  int (*fp)(int) = argc > 5 ? mul2 : add1;
  int r = 0;
  #pragma omp target map(from: r)
  { r = fp(41); }
  printf("r=%d host_counter_before_update=%d\n", r, counter);
  #pragma omp target update from(counter)
  printf("device_counter=%d\n", counter);
  return 0;
}
"""


def test_captured_function_pointer_runs_device_copy(offload):
    exe = offload.compile(CAPTURED_FPTR, name="captured.c")
    r = offload.run(exe)
    check_ok(r)
    # The region ran add1 through the translated pointer: the DEVICE copy of
    # `counter` changed, the host copy did not.
    assert "r=42 host_counter_before_update=0" in r.stdout
    assert "device_counter=1" in r.stdout


def test_translation_is_traced_through_the_mapping_table(offload):
    exe = offload.compile(CAPTURED_FPTR, name="captured_trace.c")
    trace = offload.tmp / "trace.jsonl"
    r = offload.run(exe, env={"OMPSIM_TRACE": "entry,table", "OMPSIM_TRACE_FILE": str(trace)})
    check_ok(r)
    text = trace.read_text()
    assert '"indirect"' in text and "host:add1+0x0" in text and "host:mul2+0x0" in text
    assert '"publish"' in text


ARRAYS_AND_STRUCTS = r"""
#include <stdio.h>
int add1(int x) { return x + 1; }
int mul2(int x) { return x * 2; }
int neg(int x) { return -x; }
#pragma omp declare target to(add1, mul2, neg) indirect
typedef int (*op_t)(int);
struct Ops { op_t first; int bias; op_t second; };
int main(void) {
  op_t table[3] = {add1, mul2, neg};
  struct Ops ops = {mul2, 5, add1};
  int out[3] = {0, 0, 0};
  int s = 0;
  #pragma omp target map(to: table, ops) map(from: out, s)
  {
    for (int i = 0; i < 3; ++i) out[i] = table[i](10);
    s = ops.second(ops.first(ops.bias));
  }
  /* Each element captured on its own is a mapped pointer value. */
  int each[3];
  for (int i = 0; i < 3; ++i) {
    op_t f = table[i];
    #pragma omp target map(from: each[i])
    each[i] = f(7);
  }
  printf("out=%d,%d,%d s=%d each=%d,%d,%d\n", out[0], out[1], out[2], s, each[0], each[1], each[2]);
  return 0;
}
"""


def test_arrays_and_struct_members_of_function_pointers(offload):
    exe = offload.compile(ARRAYS_AND_STRUCTS, name="arrays.c")
    r = offload.run(exe)
    check_ok(r)
    assert "out=11,20,-10 s=11 each=8,14,-7" in r.stdout


TEAMS = r"""
#include <stdio.h>
int square(int x) { return x * x; }
#pragma omp declare target to(square) indirect
int main(void) {
  int (*fp)(int) = square;
  enum { N = 1000 };
  static int a[N];
  long sum = 0;
  #pragma omp target teams distribute parallel for num_teams(4) thread_limit(8) map(from: a) reduction(+: sum)
  for (int i = 0; i < N; ++i) { a[i] = fp(i % 7); sum += a[i]; }
  long expect = 0;
  for (int i = 0; i < N; ++i) expect += (i % 7) * (i % 7);
  printf("sum=%ld expect=%ld a[13]=%d\n", sum, expect, a[13]);
  return sum == expect ? 0 : 3;
}
"""


def test_teams_loop_with_indirect_calls(offload):
    exe = offload.compile(TEAMS, name="teams.c")
    r = offload.run(exe)
    check_ok(r)
    assert "a[13]=36" in r.stdout


MAPPER = r"""
#include <stdio.h>
#include <stdlib.h>
typedef struct { int n; double *data; } vec_t;
#pragma omp declare mapper(vec_t v) map(v, v.data[0:v.n])
int main(void) {
  vec_t v = {8, malloc(8 * sizeof(double))};
  double *orig = v.data;
  for (int i = 0; i < v.n; ++i) v.data[i] = i;
  #pragma omp target map(tofrom: v)
  for (int i = 0; i < v.n; ++i) v.data[i] = v.data[i] * 3 + 1;
  printf("data[7]=%g same_host_pointer=%d\n", v.data[7], v.data == orig);
  return 0;
}
"""


def test_declare_mapper(offload):
    exe = offload.compile(MAPPER, name="mapper.c")
    r = offload.run(exe)
    check_ok(r)
    assert "data[7]=22 same_host_pointer=1" in r.stdout


TARGET_DATA = r"""
#include <stdio.h>
#include <omp.h>
int main(void) {
  int a[4] = {1, 2, 3, 4};
  int *p = a;
  int dev = omp_get_default_device();
  #pragma omp target data map(tofrom: a)
  {
    printf("present_inside=%d\n", omp_target_is_present(a, dev));
    a[0] = 100;                     /* host-only change */
    #pragma omp target update to(a[0:1])
    #pragma omp target
    for (int i = 0; i < 4; ++i) a[i] *= 2;
    #pragma omp target update from(a[1:1])
    printf("mid=%d,%d,%d\n", a[0], a[1], a[2]);
    #pragma omp target data use_device_ptr(p)
    { printf("use_device_ptr_differs=%d mapped_ptr_matches=%d\n", p != a, p == omp_get_mapped_ptr(a, dev)); }
  }
  printf("end=%d,%d,%d,%d present_after=%d\n", a[0], a[1], a[2], a[3], omp_target_is_present(a, dev));
  int x = 7;
  #pragma omp target enter data map(to: x)
  #pragma omp target map(tofrom: x)
  x += 1;
  printf("after_region_x=%d\n", x);   /* still mapped: no copy back */
  #pragma omp target exit data map(from: x)
  printf("after_exit_x=%d\n", x);
  return 0;
}
"""


def test_target_data_update_enter_exit(offload):
    exe = offload.compile(TARGET_DATA, name="data.c")
    r = offload.run(exe)
    check_ok(r)
    assert "present_inside=1" in r.stdout
    assert "mid=100,4,3" in r.stdout            # only a[1] came back
    assert "use_device_ptr_differs=1 mapped_ptr_matches=1" in r.stdout
    assert "end=200,4,6,8 present_after=0" in r.stdout
    assert "after_region_x=7" in r.stdout
    assert "after_exit_x=8" in r.stdout


PRESENT_MISSING = r"""
#include <stdio.h>
int main(void) {
  int x = 1;
  printf("before\n");
  #pragma omp target map(present, to: x)
  x += 1;
  printf("not reached %d\n", x);
  return 0;
}
"""


def test_present_missing_is_one_fatal_line(offload):
    exe = offload.compile(PRESENT_MISSING, name="present.c")
    r = offload.run(exe)
    assert r.returncode != 0
    lines = ompsim_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    assert "'x'" in lines[0] and "not present" in lines[0] and "0x" in lines[0]
    assert "before" in r.stdout and "not reached" not in r.stdout


LIB = r"""
int lib_counter = 0;
#pragma omp declare target to(lib_counter)
int lib_triple(int x) { lib_counter += 1; return 3 * x; }
#pragma omp declare target to(lib_triple) indirect
int lib_apply(int (*fp)(int), int x) {
  int r = 0;
  #pragma omp target map(from: r)
  r = fp(x);
  return r;
}
int (*lib_get_triple(void))(int) { return lib_triple; }
int lib_device_counter(void) {
  #pragma omp target update from(lib_counter)
  return lib_counter;
}
"""

LIB_MAIN = r"""
#include <stdio.h>
int lib_apply(int (*fp)(int), int x);
int (*lib_get_triple(void))(int);
int lib_device_counter(void);
extern int lib_counter;
int main_counter = 0;
#pragma omp declare target to(main_counter)
int main_inc(int x) { main_counter += 1; return x + 1; }
#pragma omp declare target to(main_inc) indirect
int main(void) {
  int a = lib_apply(main_inc, 1);          /* program's function, library's region */
  int (*t)(int) = lib_get_triple();
  int b = 0;
  #pragma omp target map(from: b)
  b = t(5);                                 /* library's function, program's region */
  int c = lib_apply(t, 2);
  #pragma omp target update from(main_counter)
  printf("a=%d b=%d c=%d host_lib_counter=%d lib_device=%d main_device=%d\n",
         a, b, c, lib_counter, lib_device_counter(), main_counter);
  return 0;
}
"""


def test_shared_library_with_its_own_indirect_functions(offload):
    lib_src = offload.tmp / "libind.c"
    lib_src.write_text(LIB)
    lib = offload.tmp / "libind.so"
    r = subprocess.run([CLANG, *OFFLOAD_FLAGS, "-fPIC", "-shared", str(lib_src), "-o", str(lib)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    exe = offload.compile(LIB_MAIN, name="libmain.c",
                          extra=[str(lib), "-Wl,-rpath," + str(offload.tmp)])
    trace = offload.tmp / "trace.jsonl"
    r = offload.run(exe, env={"OMPSIM_TRACE": "table", "OMPSIM_TRACE_FILE": str(trace)})
    check_ok(r)
    assert "a=2 b=15 c=6 host_lib_counter=0 lib_device=2 main_device=1" in r.stdout
    # One merged table over both registered images.
    assert '"n":2' in trace.read_text().replace(" ", "")


MAPS = r"""
#include <stdio.h>
#include <string.h>
int main(void) {
  int x = 0;
  #pragma omp target map(tofrom: x)
  x = 1;
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  while (fgets(line, sizeof line, f))
    if (strchr(line, '/') && strstr(strrchr(line, '/'), "libomptarget")) fputs(strchr(line, '/'), stdout);
  return x == 1 ? 0 : 2;
}
"""


def test_stock_libomptarget_is_not_loaded(offload):
    exe = offload.compile(MAPS, name="maps.c")
    r = offload.run(exe)
    check_ok(r)
    loaded = set(line.strip() for line in r.stdout.splitlines())
    assert loaded == {os.path.realpath(paths.RUNTIME)}, loaded


def test_offload_disabled_runs_on_the_host(offload):
    exe = offload.compile(CAPTURED_FPTR.replace('printf("r=%d', 'printf("devices=%d ", omp_get_num_devices()); printf("r=%d')
                          .replace("#include <stdio.h>", "#include <stdio.h>\n#include <omp.h>"),
                          name="disabled.c")
    r = offload.run(exe, env={"OMP_TARGET_OFFLOAD": "DISABLED"})
    check_ok(r)
    # Host fallback: the host's add1 ran and bumped the host counter.
    assert "devices=0 r=42 host_counter_before_update=1" in r.stdout


FAKE_PLUGIN = r"""
#include <stdint.h>
#include <stddef.h>
int32_t __tgt_rtl_plugin_api_version(void) { return VERSION; }
const char *__tgt_rtl_plugin_name(void) { return "fake"; }
int32_t __tgt_rtl_is_valid_binary(const void *i) { return 0; }
int32_t __tgt_rtl_number_of_devices(void) { return 0; }
int32_t __tgt_rtl_init_device(int32_t d) { return 0; }
int32_t __tgt_rtl_load_binary(int32_t d, const void *i, void **b) { return -1; }
#ifndef DROP_GET_GLOBAL
int32_t __tgt_rtl_get_global(int32_t d, void *b, uint64_t s, const char *n, void **p) { return -1; }
#endif
int32_t __tgt_rtl_get_function(int32_t d, void *b, const char *n, void **k) { return -1; }
void *__tgt_rtl_data_alloc(int32_t d, int64_t s, void *h, int32_t k) { return NULL; }
int32_t __tgt_rtl_data_delete(int32_t d, void *p, int32_t k) { return -1; }
int32_t __tgt_rtl_data_submit(int32_t d, void *t, const void *h, int64_t s) { return -1; }
int32_t __tgt_rtl_data_retrieve(int32_t d, void *h, const void *t, int64_t s) { return -1; }
int32_t __tgt_rtl_run_target_region(int32_t d, void *k, void **a, int32_t n, const void *c) { return -1; }
const char *__tgt_rtl_last_error(int32_t d) { return ""; }
"""


def build_fake_plugin(offload, name, defines):
    src = offload.tmp / (name + ".c")
    src.write_text(FAKE_PLUGIN)
    so = offload.tmp / (name + ".so")
    r = subprocess.run([CLANG, "-shared", "-fPIC", *defines, str(src), "-o", str(so)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    return so


@pytest.mark.parametrize("case,defines,expect", [
    ("missing_symbol", ["-DVERSION=1", "-DDROP_GET_GLOBAL"], "lacks required symbol __tgt_rtl_get_global"),
    ("wrong_version", ["-DVERSION=99"], "plugin API version 99"),
], ids=["missing-symbol", "wrong-version"])
def test_bad_plugin_is_one_line(offload, case, defines, expect):
    plugin = build_fake_plugin(offload, case, defines)
    exe = offload.compile(CAPTURED_FPTR, name="plugin_%s.c" % case)
    r = offload.run(exe, env={"OMPSIM_PLUGINS": str(plugin)})
    assert r.returncode != 0
    lines = ompsim_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    assert expect in lines[0] and str(plugin) in lines[0], lines[0]


def test_plugin_with_no_devices_falls_back_when_not_mandatory(offload):
    plugin = build_fake_plugin(offload, "nodevices", ["-DVERSION=1"])
    exe = offload.compile(CAPTURED_FPTR, name="nodev.c")
    r = offload.run(exe, env={"OMPSIM_PLUGINS": str(plugin), "OMP_TARGET_OFFLOAD": "DEFAULT"})
    check_ok(r)
    assert "r=42 host_counter_before_update=1" in r.stdout
    r = offload.run(exe, env={"OMPSIM_PLUGINS": str(plugin), "OMP_TARGET_OFFLOAD": "MANDATORY"})
    assert r.returncode != 0
    assert len(ompsim_lines(r.stderr)) == 1, r.stderr


DESCRIPTOR = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef struct { uint64_t Reserved; uint16_t Version, Kind; uint32_t Flags; void *Address;
                 char *SymbolName; uint64_t Size, Data; void *AuxAddr; } entry_t;
typedef struct { void *Start, *End; entry_t *EB, *EE; } image_t;
typedef struct { int32_t N; image_t *Images; entry_t *HB, *HE; } desc_t;
void __tgt_register_lib(desc_t *);
int omp_target_is_present(const void *, int);
int host_fn(int x) { return x; }
int main(int argc, char **argv) {
  /* argv[1]: a real x86-64 shared object to use as the device image. */
  FILE *f = fopen(argv[1], "rb");
  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  char *bytes = malloc(n); fread(bytes, 1, n, f); fclose(f);
  static entry_t entries[1];
  entries[0] = (entry_t){0, 1, 1, 0x8, (void *)host_fn, MODE_NAME, 8, 0, 0};
  static image_t img; img = (image_t){bytes, bytes + n, entries, entries + 1};
  static desc_t d; d = (desc_t){1, &img, entries, entries + 1};
  printf("registering\n");
  __tgt_register_lib(&d);
  printf("registered\n");
  fflush(stdout);
  /* The device loads its images when first used, as stock's does. */
  omp_target_is_present(host_fn, 0);
  printf("used\n");
  return 0;
}
"""


@pytest.mark.parametrize("mode,expect", [
    ("null_name", "null symbol name"),
    ("missing_global", "indirect entry 'no_such_device_global' of device image 0 of"),
], ids=["null-name", "missing-device-global"])
def test_descriptor_errors_are_one_line(offload, mode, expect):
    # The "device image": any x86-64 shared object without the entry's global.
    image_src = offload.tmp / "img.c"
    image_src.write_text("int some_symbol = 1;\n")
    image = offload.tmp / "img.so"
    subprocess.run([CLANG, "-shared", "-fPIC", str(image_src), "-o", str(image)], check=True)
    name = "(char *)0" if mode == "null_name" else '"no_such_device_global"'
    src = offload.tmp / ("desc_%s.c" % mode)
    src.write_text(DESCRIPTOR.replace("MODE_NAME", name))
    exe = offload.tmp / ("desc_%s.exe" % mode)
    subprocess.run([CLANG, "-O1", str(src), "-o", str(exe), os.path.join(paths.LLVM_LIB, "libomptarget.so.22.1"),
                    "-Wl,-rpath," + paths.LLVM_LIB], check=True)
    r = offload.run(exe, args=[str(image)])
    assert r.returncode != 0
    lines = ompsim_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    assert expect in lines[0], lines[0]
    # A malformed entry table fails registration; an image the device cannot
    # load fails when the device is first used.
    assert "registering" in r.stdout and "used" not in r.stdout
    assert ("registered\n" in r.stdout) == (mode == "missing_global"), r.stdout


DLOPEN_MAIN = r"""
#include <dlfcn.h>
#include <stdio.h>
int main_counter = 0;
#pragma omp declare target to(main_counter)
int main_inc(int x) { main_counter += 1; return x + 1; }
#pragma omp declare target to(main_inc) indirect
int main(int argc, char **argv) {
  #pragma omp target update to(main_counter)      /* the device is in use */
  void *lib = dlopen(argv[1], RTLD_NOW);          /* registers late */
  if (!lib) { printf("dlopen: %s\n", dlerror()); return 4; }
  int (*lib_apply)(int (*)(int), int) = (int (*)(int (*)(int), int))dlsym(lib, "lib_apply");
  int (*(*get)(void))(int) = (int (*(*)(void))(int))dlsym(lib, "lib_get_triple");
  int a = lib_apply(main_inc, 1);
  int (*t)(int) = get();
  int b = 0;
  #pragma omp target map(from: b)
  b = t(5);
  dlclose(lib);                                    /* unregisters */
  int (*fp)(int) = main_inc;
  int c = 0;
  #pragma omp target map(from: c)
  c = fp(9);
  #pragma omp target update from(main_counter)
  printf("a=%d b=%d c=%d main_device=%d\n", a, b, c, main_counter);
  return 0;
}
"""


def test_late_registration_and_unregistration_republish(offload):
    lib_src = offload.tmp / "libind.c"
    lib_src.write_text(LIB)
    lib = offload.tmp / "libind.so"
    r = subprocess.run([CLANG, *OFFLOAD_FLAGS, "-fPIC", "-shared", str(lib_src), "-o", str(lib)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    exe = offload.compile(DLOPEN_MAIN, name="dlmain.c", extra=["-ldl"])
    trace = offload.tmp / "trace.jsonl"
    r = offload.run(exe, args=[str(lib)], env={"OMPSIM_TRACE": "table", "OMPSIM_TRACE_FILE": str(trace)})
    check_ok(r)
    assert "a=2 b=15 c=10 main_device=2" in r.stdout
    import json
    sizes = [e["n"] for e in map(json.loads, trace.read_text().splitlines())
             if e.get("event") == "publish" and e.get("device") == 0]
    # program alone, then with the library, then without it again (and empty at
    # exit), on device 0 (the host plugin has stock's four devices)
    assert sizes[:3] == [1, 2, 1], sizes


FORWARDING_PLUGIN = r"""
/* The host plugin without __tgt_rtl_set_function_ptr_map: forces the
   runtime's generic publication path (device memory + image globals). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
static void *host;
static void *fn(const char *name) {
  if (!host) host = dlopen(HOST_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  return dlsym(host, name);
}
#define FWD(ret, name, params, args) \
  ret name params { return ((ret(*) params)fn(#name)) args; }
FWD(int32_t, __tgt_rtl_plugin_api_version, (void), ())
const char *__tgt_rtl_plugin_name(void) { return "forward"; }
FWD(int32_t, __tgt_rtl_is_valid_binary, (const void *i), (i))
FWD(int32_t, __tgt_rtl_number_of_devices, (void), ())
FWD(int32_t, __tgt_rtl_init_device, (int32_t d), (d))
FWD(int32_t, __tgt_rtl_load_binary, (int32_t d, const void *i, void **b), (d, i, b))
FWD(int32_t, __tgt_rtl_get_global, (int32_t d, void *b, uint64_t s, const char *n, void **p), (d, b, s, n, p))
FWD(int32_t, __tgt_rtl_get_function, (int32_t d, void *b, const char *n, void **k), (d, b, n, k))
FWD(void *, __tgt_rtl_data_alloc, (int32_t d, int64_t s, void *h, int32_t k), (d, s, h, k))
FWD(int32_t, __tgt_rtl_data_delete, (int32_t d, void *p, int32_t k), (d, p, k))
FWD(int32_t, __tgt_rtl_data_submit, (int32_t d, void *t, const void *h, int64_t s), (d, t, h, s))
FWD(int32_t, __tgt_rtl_data_retrieve, (int32_t d, void *h, const void *t, int64_t s), (d, h, t, s))
FWD(int32_t, __tgt_rtl_run_target_region, (int32_t d, void *k, void **a, int32_t n, const void *c), (d, k, a, n, c))
FWD(const char *, __tgt_rtl_last_error, (int32_t d), (d))
"""

GLOBALS_TABLE = r"""
#include <stdint.h>
#include <stdio.h>
typedef struct { uint64_t host_ptr, tgt_ptr; } pair_t;
pair_t *__omp_offloading_fptr_map_p = 0;
uint64_t __omp_offloading_fptr_map_size = 0;
#pragma omp declare target to(__omp_offloading_fptr_map_p, __omp_offloading_fptr_map_size)
int counter = 0;
#pragma omp declare target to(counter)
int add1(int x) { counter += 1; return x + 1; }
int mul2(int x) { counter += 10; return x * 2; }
#pragma omp declare target to(add1, mul2) indirect
int main(void) {
  int (*table[2])(int) = {add1, mul2};
  int r = 0;
  uint64_t n = 0;
  /* r is read in the region, so it maps tofrom: a from-only copy starts undefined. */
  #pragma omp target map(to: table) map(tofrom: r) map(from: n)
  {
    /* Look each host pointer up in the table the runtime published. */
    n = __omp_offloading_fptr_map_size;
    for (int i = 0; i < 2; ++i) {
      int (*f)(int) = table[i];
      for (uint64_t k = 0; k < n; ++k)
        if (__omp_offloading_fptr_map_p[k].host_ptr == (uint64_t)(uintptr_t)table[i])
          f = (int (*)(int))(uintptr_t)__omp_offloading_fptr_map_p[k].tgt_ptr;
      r = f(r + 3);
    }
  }
  #pragma omp target update from(counter)
  printf("n=%lu r=%d device_counter=%d host_counter_after=%d\n", (unsigned long)n, r, counter, counter);
  return 0;
}
"""


def test_table_published_through_device_globals_without_plugin_hook(offload):
    src = offload.tmp / "forward.c"
    src.write_text(FORWARDING_PLUGIN)
    plugin = offload.tmp / "forward.so"
    host_plugin = os.path.join(paths.LIB, "libompsim-plugin-host.so")
    r = subprocess.run([CLANG, "-shared", "-fPIC", '-DHOST_PLUGIN="%s"' % host_plugin, str(src),
                        "-o", str(plugin), "-ldl"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    exe = offload.compile(GLOBALS_TABLE, name="globals_table.c")
    trace = offload.tmp / "trace.jsonl"
    r = offload.run(exe, env={"OMPSIM_PLUGINS": str(plugin), "OMPSIM_TRACE": "table",
                              "OMPSIM_TRACE_FILE": str(trace)})
    check_ok(r)
    # (0+3)+1 = 4 through add1, then (4+3)*2 = 14 through mul2: both device copies ran.
    assert "n=2 r=14 device_counter=11" in r.stdout
    assert '"via":"device_globals"' in trace.read_text().replace(" ", "")


def test_libomptarget_info_kernel_and_transfer_lines(offload):
    exe = offload.compile(CAPTURED_FPTR, name="info.c")
    r = offload.run(exe, env={"LIBOMPTARGET_INFO": "0x21"})
    check_ok(r)
    assert re.search(r"info: Entering OpenMP kernel at \S+:\d+:\d+ with \d+ arguments:", r.stderr), r.stderr
    assert "info: Copying data from device to host" in r.stderr
    quiet = offload.run(exe)
    assert "info:" not in quiet.stderr
