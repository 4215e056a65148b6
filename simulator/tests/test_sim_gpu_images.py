"""GPU images on the simulated device: a program built for an NVIDIA or AMD GPU (`ompsim cc
--gpu=sm_90`, or clang's `--offload-arch=gfx90a`) carries its device code as nvptx64 or amdgcn
LLVM IR, which sim retargets for the host's CPU and runs on its GPU device-runtime ABI
(simulator/src/gpu/, runtime/device/gpu-abi/GpuImageEntries.cpp). What the GPU's code generator
emits runs: kernel environments, SPMD and generic kernels, team-shared memory, printf's argument
buffer, and indirect calls, translated through the table sim publishes. What sim does not serve
yet is refused at load with one line naming the entry point and the function that needs it."""
import os
import re
import subprocess

import pytest

from ompsim_base import paths, toolchain

OMPSIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "ompsim")

pytestmark = pytest.mark.e2e

ARCHS = ["sm_90", "gfx90a"]

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.join(HERE, "..", "..", "conformance", "programs")

SPMD_AND_GENERIC = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  double a[1000], b[1000];
  for (int i = 0; i < 1000; ++i) a[i] = i;
  /* SPMD: the loop over the teams and the threads of each. */
#pragma omp target teams distribute parallel for num_teams(3) map(to : a) map(from : b)
  for (int i = 0; i < 1000; ++i) b[i] = 2 * a[i];
  /* Generic: a team's local, globalized, read by its parallel region. */
  int out[32] = {0}, teams = 0, threads = 0;
#pragma omp target teams num_teams(4) map(tofrom : out, teams, threads)
  {
    int base = omp_get_team_num() * 100;
#pragma omp parallel num_threads(8)
    {
      out[omp_get_team_num() * 8 + omp_get_thread_num()] = base + omp_get_thread_num();
      if (omp_get_team_num() == 0 && omp_get_thread_num() == 0) {
        teams = omp_get_num_teams();
        threads = omp_get_num_threads();
      }
    }
  }
  int ok = 1;
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 8; ++i) ok &= out[t * 8 + i] == t * 100 + i;
  /* Generic-SPMD: one statement, run by one thread of the one team. */
  double s = 0;
#pragma omp target map(tofrom : s) map(to : b)
  s = b[10] + b[999];
  printf("spmd %g %g generic teams=%d threads=%d ok=%d single %g\n", b[0], b[999], teams, threads, ok, s);
  return 0;
}
"""

TEAM_SHARED = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int seen[4] = {-1, -1, -1, -1};
#pragma omp target teams num_teams(4) map(tofrom : seen)
  {
    static int mine;
#pragma omp allocate(mine) allocator(omp_pteam_mem_alloc)
    mine = omp_get_team_num() * 10;
#pragma omp parallel num_threads(4)
    if (omp_get_thread_num() == 3)
      seen[omp_get_team_num()] = mine;
  }
  printf("%d %d %d %d\n", seen[0], seen[1], seen[2], seen[3]);
  return 0;
}
"""

PRINTF = r"""
#include <stdio.h>
int main(void) {
#pragma omp target
  printf("int %d str %s pad [%5.2f] long %ld char %c hex %x star [%*d] pct %% ptr %s\n", 42, "hi", 3.5,
         1234567890123L, 'z', 255u, 4, 7, (char *)0 == 0 ? "null-ok" : "?");
  return 0;
}
"""

REDUCTIONS = r"""
#include <stdio.h>
int main(void) {
  int sum = 0;
  double top = 0;
#pragma omp target parallel for reduction(+ : sum) reduction(max : top) map(tofrom : sum, top)
  for (int i = 0; i < 100; ++i) {
    sum += i;
    if (i * 0.5 > top) top = i * 0.5;
  }
  long total = 0;
#pragma omp target teams distribute parallel for num_teams(5) reduction(+ : total) map(tofrom : total)
  for (int i = 0; i < 1000; ++i) total += i;
  long plain = 0; /* no clauses: the compiler's and sim's defaults */
#pragma omp target teams distribute parallel for reduction(+ : plain) map(tofrom : plain)
  for (int i = 0; i < 100000; ++i) plain += i;
  printf("%d %g %ld %ld\n", sum, top, total, plain);
  return 0;
}
"""

UNSERVED_ENTRY = r"""
#include <stdio.h>
/* A DeviceRTL entry point, in the GPU's code only (the host fallback has none). */
#if defined(__NVPTX__) || defined(__AMDGCN__)
#pragma omp declare target
void *__kmpc_alloc_aggregate_arg(void *, void *);
#pragma omp end declare target
#endif
int main(void) {
  int r = 0;
#pragma omp target map(tofrom : r)
  {
#if defined(__NVPTX__) || defined(__AMDGCN__)
    r = __kmpc_alloc_aggregate_arg(&r, &r) != 0;
#endif
    r = 1;
  }
  printf("%d\n", r);
  return 0;
}
"""

# A function of the GPU's device math library the simulated GPU does not serve (libm has no
# sincospi): __nv_sincospif on nvptx64, __ocml_sincospi_f32 on amdgcn.
UNSERVED_DEVICE_MATH = r"""
#include <math.h>
#include <stdio.h>
int main(void) {
  float s = 0, c = 0;
#pragma omp target map(tofrom : s, c)
  {
#if defined(__NVPTX__) || defined(__AMDGCN__)
    sincospif(0.25f, &s, &c); /* clang's GPU math wrappers have it; glibc has not */
#endif
  }
  printf("%g %g\n", s, c);
  return 0;
}
"""

# openmp-opt SPMDizes this generic kernel at -O2 (Generic-SPMD): the team's sequential
# statement runs guarded for thread 0, followed by a barrier of the team.
SPMDIZED = r"""
#include <stdio.h>
int main(void) {
  int x = 0, y = 1;
#pragma omp target teams num_teams(1) map(tofrom : x, y)
  {
    x += 5;
#pragma omp parallel
    y = 6;
  }
  printf("%d, %d\n", x, y);
  return 0;
}
"""

# More teams than sim's device threads: each team runs one thread, and clang's GPU code
# for `distribute parallel for` runs one iteration per chunk of its static schedule.
MANY_TEAMS = r"""
#include <stdio.h>
int main(void) {
  enum { N = 5032 };
  static int a[N];
#pragma omp target teams num_teams(256) thread_limit(32) map(tofrom : a)
  {
#pragma omp distribute parallel for
    for (int i = 0; i < N; ++i) a[i] += 1;
#pragma omp distribute parallel for
    for (int i = 0; i < N; ++i) a[i] += 10;
  }
  int bad = 0;
  for (int i = 0; i < N; ++i) bad += a[i] != 11;
  printf("wrong: %d\n", bad);
  return 0;
}
"""

# CUDA's device math functions libm lacks, called from GPU code: clang's CUDA wrappers are not
# in an OpenMP C build, so the image calls them by name.
DEVICE_MATH = r"""
#include <stdio.h>
float normcdfinvf(float);
double erfinv(double);
#pragma omp declare target to(normcdfinvf, erfinv)
int main(void) {
  float p = 0;
  double e = 0;
#pragma omp target map(from : p, e)
  {
    p = normcdfinvf(0.975f);
    e = erfinv(0.5);
  }
  printf("%.4f %.6f\n", p, e);
  return 0;
}
"""

# sincosf and sincos in GPU code: clang's wrappers call libdevice's __nv_sincosf(x, &s, &c) on
# nvptx64 and the ROCm device libraries' __ocml_sincos_f32(x, &c), which returns the sine, on
# amdgcn; frexp and modf write through a pointer too. Every value must be the host's, bit for bit.
OUT_POINTER_MATH = r"""
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>
#define N 512
static float sf[N], cf[N], mf[N], wf[N];
static double sd[N], cd[N], md[N], wd[N];
static int ef[N], ed[N];
static float xf(int i) { return (i - N / 2) * 0.0625f + (i % 7) * 1e3f; }
static double xd(int i) { return (i - N / 2) * 0.0625 + (i % 7) * 1e3; }
#pragma omp declare target to(xf, xd)
int main(void) {
#pragma omp target teams distribute parallel for map(from : sf, cf, mf, wf, sd, cd, md, wd, ef, ed)
  for (int i = 0; i < N; ++i) {
    sincosf(xf(i), &sf[i], &cf[i]);
    sincos(xd(i), &sd[i], &cd[i]);
    mf[i] = modff(xf(i), &wf[i]) + frexpf(xf(i), &ef[i]);
    md[i] = modf(xd(i), &wd[i]) + frexp(xd(i), &ed[i]);
  }
  int wrong = 0;
  for (int i = 0; i < N; ++i) {
    float s, c, w;
    double ds, dc, dw;
    int e, de;
    sincosf(xf(i), &s, &c);
    sincos(xd(i), &ds, &dc);
    float m = modff(xf(i), &w) + frexpf(xf(i), &e);
    double dm = modf(xd(i), &dw) + frexp(xd(i), &de);
    wrong += memcmp(&s, &sf[i], sizeof s) || memcmp(&c, &cf[i], sizeof c) || memcmp(&ds, &sd[i], sizeof ds) ||
             memcmp(&dc, &cd[i], sizeof dc) || memcmp(&m, &mf[i], sizeof m) || memcmp(&w, &wf[i], sizeof w) ||
             memcmp(&dm, &md[i], sizeof dm) || memcmp(&dw, &wd[i], sizeof dw) || e != ef[i] || de != ed[i];
  }
  printf("wrong %d\n", wrong);
  return 0;
}
"""

MISSING_DEFINITION = r"""
#include <stdio.h>
#pragma omp declare target
int helper(int);
#pragma omp end declare target
int main(void) {
  int r = 0;
#pragma omp target map(tofrom : r)
  r = helper(41);
  printf("%d\n", r);
  return 0;
}
"""


BARE = r"""
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int ids[4 * 64], next[4 * 64];
  unsigned long long ballot = 0;
  /* Every thread of every block runs the region; the block's shared memory and barrier. */
#pragma omp target teams ompx_bare num_teams(4) thread_limit(64) map(from : ids, next, ballot)
  {
    static int slot[64];
#pragma omp allocate(slot) allocator(omp_pteam_mem_alloc)
    int t = ompx_thread_id_x(), b = ompx_block_id_x();
    slot[t] = b * 1000 + t;
    ompx_sync_block_acq_rel();
    ids[b * 64 + t] = b * ompx_block_dim_x() + t;
    next[b * 64 + t] = slot[(t + 1) % 64];
    unsigned long long lanes = ompx_ballot_sync(~0ULL, 1);
    if (b == 0 && t == 0)
      ballot = lanes;
  }
  int wrong = 0;
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t < 64; ++t)
      wrong += ids[b * 64 + t] != b * 64 + t || next[b * 64 + t] != b * 1000 + (t + 1) % 64;
  printf("wrong %d ballot %llx\n", wrong, ballot);
  return 0;
}
"""

DYNAMIC_SHARED = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int out[3 * 16];
#pragma omp target teams num_teams(3) thread_limit(16) ompx_dyn_cgroup_mem(16 * sizeof(int)) map(from : out)
#pragma omp parallel num_threads(16)
  {
    int *buf = (int *)llvm_omp_target_dynamic_shared_alloc();
    int t = omp_get_thread_num(), team = omp_get_team_num();
    buf[t] = team * 100 + t;
#pragma omp barrier
    out[team * 16 + t] = buf[(t + 1) % 16];
  }
  int wrong = 0;
  for (int team = 0; team < 3; ++team)
    for (int t = 0; t < 16; ++t)
      wrong += out[team * 16 + t] != team * 100 + (t + 1) % 16;
  printf("wrong %d host %p\n", wrong, llvm_omp_target_dynamic_shared_alloc());
  return 0;
}
"""

TOO_MUCH_SHARED = r"""
#include <stdio.h>
int main(void) {
  int x = 0;
#pragma omp target teams num_teams(1) ompx_dyn_cgroup_mem(1 << 20) map(tofrom : x)
  x = 1;
  printf("%d\n", x);
  return 0;
}
"""

TASK_AND_CONDITIONAL = r"""
#include <stdio.h>
int main(void) {
  int x = 0, last = -1, a[100];
  for (int i = 0; i < 100; ++i) a[i] = i % 7;
  /* A task in a target region without teams: a one-block launch. */
#pragma omp target map(tofrom : x)
  {
#pragma omp task shared(x) firstprivate(a)
    x = a[40] + 40;
#pragma omp taskwait
  }
  /* lastprivate(conditional:): clang takes a warp's lanes one at a time. */
#pragma omp target parallel for lastprivate(conditional : last) map(tofrom : last) map(to : a)
  for (int i = 0; i < 100; ++i)
    if (a[i] == 3)
      last = i;
  printf("task %d last %d\n", x, last);
  return 0;
}
"""

def build(offload, source, arch, name):
    return offload.compile(source, name=name, translate="pass", extra=["--gpu=" + arch])


def run_ok(offload, source, arch, name, expected, env=None):
    """Builds `source` for `arch`, runs it on sim, and checks it exits 0 printing `expected`."""
    r = offload.run(build(offload, source, arch, name), backend="sim", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected, (r.stdout, r.stderr)
    return r


@pytest.mark.parametrize("arch", ARCHS)
def test_spmd_generic_and_single_thread_kernels_compute_what_the_program_says(offload, arch):
    run_ok(offload, SPMD_AND_GENERIC, arch, "kernels.c", "spmd 0 1998 generic teams=4 threads=8 ok=1 single 2018\n")


@pytest.mark.parametrize("arch", ARCHS)
def test_team_shared_memory_is_one_copy_per_team(offload, arch):
    # nvptx64 keeps the variable in addrspace(3); amdgcn in its kernel's LDS struct.
    run_ok(offload, TEAM_SHARED, arch, "pteam.c", "0 10 20 30\n")


@pytest.mark.parametrize("arch", ARCHS)
def test_device_printf_prints_what_printf_prints(offload, arch):
    # nvptx64 packs the arguments into a buffer for vprintf; amdgcn calls printf.
    run_ok(offload, PRINTF, arch, "printf.c",
           "int 42 str hi pad [ 3.50] long 1234567890123 char z hex ff star [   7] pct % ptr null-ok\n")


def build_conformance(offload, program, arch, translate):
    src = os.path.join(CONFORMANCE, program)
    if not os.path.exists(src):
        pytest.skip("conformance program %s is not in this checkout" % program)
    exe = offload.tmp / ("%s.%s.%s" % (program, arch, translate))
    cmd = [OMPSIM, "cc", "--translate=" + translate, "--gpu=" + arch, "-O1",
           "-I" + os.path.join(CONFORMANCE, "inputs"), src, "-o", str(exe)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=offload.tmp,
                       timeout=300, env=toolchain.environment())
    assert r.returncode == 0, "compile failed: %s\n%s" % (" ".join(cmd), r.stdout)
    return exe


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("program", ["declare_target_to_indirect.c", "virtual_device_built.cpp",
                                     "fp_table_compare_on_device.c", "recursion_through_fp.c"])
def test_indirect_calls_are_translated_in_gpu_code(offload, arch, program):
    r = offload.run(build_conformance(offload, program, arch, "pass"), backend="sim")
    assert r.returncode == 0 and "PASS" in r.stdout, (r.stdout, r.stderr)


@pytest.mark.parametrize("arch", ARCHS)
def test_without_the_pass_gpu_code_calls_the_host_address_and_sim_names_it(offload, arch):
    # clang-22 emits no translation at an indirect call site on any GPU target: on a separate
    # address space the device calls the host's address, which sim names.
    r = offload.run(build_conformance(offload, "fp_map_to_scalar.c", arch, "native"), backend="sim")
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert "called untranslated host function pointer" in r.stderr, r.stderr


@pytest.mark.parametrize("arch", ARCHS)
def test_parallel_and_teams_reductions_combine_every_threads_part(offload, arch):
    run_ok(offload, REDUCTIONS, arch, "reductions.c", "4950 49.5 499500 4999950000\n")


@pytest.mark.parametrize("arch", ARCHS)
def test_a_kernel_openmp_opt_spmdizes_runs_its_guarded_sequential_part(offload, arch):
    exe = offload.compile(SPMDIZED, name="spmdized.c", translate="pass", extra=["--gpu=" + arch, "-O2"])
    r = offload.run(exe, backend="sim", env={"LIBOMPTARGET_INFO": "16"})
    assert r.returncode == 0, r.stderr
    assert "in Generic-SPMD mode" in r.stderr, r.stderr
    assert r.stdout == "5, 6\n", (r.stdout, r.stderr)


@pytest.mark.parametrize("arch", ARCHS)
def test_distribute_parallel_for_covers_every_iteration_with_one_thread_per_team(offload, arch):
    run_ok(offload, MANY_TEAMS, arch, "many_teams.c", "wrong: 0\n")


@pytest.mark.parametrize("arch", ARCHS)
def test_cudas_device_math_functions_libm_lacks_are_served(offload, arch):
    # Mandatory offload: the host has no fallback for the region (its libm lacks them too).
    exe = offload.compile(DEVICE_MATH, name="device_math.c", translate="pass",
                          extra=["--gpu=" + arch, "-fopenmp-offload-mandatory"])
    r = offload.run(exe, backend="sim")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "1.9600 0.476936\n", (r.stdout, r.stderr)


@pytest.mark.parametrize("arch", ARCHS)
def test_sincos_and_other_out_pointer_math_give_the_hosts_values(offload, arch):
    # On amdgcn, __ocml_sincos_f32 was bound to libm's sincosf, whose second pointer it does
    # not pass: the kernel wrote through a null pointer inside libm.
    exe = offload.compile(OUT_POINTER_MATH, name="out_pointer_math.c", translate="pass",
                          extra=["--gpu=" + arch, "-lm"])
    r = offload.run(exe, backend="sim")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "wrong 0\n", (r.stdout, r.stderr)


@pytest.mark.parametrize("arch", ARCHS)
def test_omp_teams_thread_limit_caps_a_gpu_kernels_block(offload, arch):
    exe = build(offload, SPMD_AND_GENERIC, arch, "kernels.c")
    r = offload.run(exe, backend="sim", env={"OMP_TEAMS_THREAD_LIMIT": "16", "LIBOMPTARGET_INFO": "16"})
    assert r.returncode == 0, r.stderr
    launches = [l for l in r.stderr.splitlines() if "Launching kernel" in l]
    assert launches and all("[16,1,1] threads" in l for l in launches), r.stderr


def single_line(r):
    assert r.returncode != 0, r.stdout
    lines = [l for l in r.stderr.splitlines() if l.startswith("ompsim:")]
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("arch", ARCHS)
def test_an_entry_point_sim_does_not_serve_yet_is_named_at_load(offload, arch):
    line = single_line(offload.run(build(offload, UNSERVED_ENTRY, arch, "aggregate_arg.c"), backend="sim"))
    assert "(%s)" % ("nvptx64" if arch.startswith("sm_") else "amdgcn") in line, line
    assert "function '__omp_offloading_" in line, line
    assert line.endswith("needs '__kmpc_alloc_aggregate_arg', which ompsim's simulated GPU does not provide yet"), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_device_math_function_sim_does_not_serve_is_named_at_load(offload, arch):
    line = single_line(offload.run(build(offload, UNSERVED_DEVICE_MATH, arch, "sincospi.c"), backend="sim"))
    missing = "__nv_sincospif" if arch.startswith("sm_") else "__ocml_sincospi_f32"
    assert line.endswith("needs '%s', a function of the GPU's device math library that ompsim's simulated "
                         "GPU does not provide yet" % missing), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_device_function_defined_only_for_the_host_is_named_at_load(offload, arch):
    # helper() is compiled without offloading: the GPU image calls a function it lacks.
    host_only = offload.tmp / "helper.c"
    host_only.write_text("int helper(int x) { return x + 1; }\n")
    obj = offload.tmp / "helper.o"
    subprocess.run([paths.tool("clang"), "-c", str(host_only), "-o", str(obj)], check=True,
                   env=toolchain.environment())
    exe = offload.compile(MISSING_DEFINITION, name="missing.c", translate="pass", extra=["--gpu=" + arch, str(obj)])
    line = single_line(offload.run(exe, backend="sim"))
    assert line.endswith("needs 'helper', which no device code of the program defines (compile the file that "
                         "defines it with offloading, under declare target)"), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_bare_kernel_runs_on_every_thread_of_every_block_with_its_gpus_warps(offload, arch):
    # clang-22's GPU code of an ompx_bare region is one thread's: it has no kernel environment,
    # and, as stock's plugins do, sim launches it in bare mode.
    lanes = "ffffffff" if arch.startswith("sm_") else "ffffffffffffffff"
    r = run_ok(offload, BARE, arch, "bare.c", "wrong 0 ballot %s\n" % lanes, env={"LIBOMPTARGET_INFO": "16"})
    assert "with [4,1,1] blocks and [64,1,1] threads in BARE mode" in r.stderr, r.stderr


@pytest.mark.parametrize("arch", ARCHS)
def test_dynamic_shared_memory_is_one_block_per_team(offload, arch):
    run_ok(offload, DYNAMIC_SHARED, arch, "dynshared.c", "wrong 0 host (nil)\n")


@pytest.mark.parametrize("arch", ARCHS)
def test_more_dynamic_shared_memory_than_the_gpu_has_is_refused_with_one_line(offload, arch):
    line = single_line(offload.run(build(offload, TOO_MUCH_SHARED, arch, "too_much_shared.c"), backend="sim"))
    limit = 227 * 1024 if arch.startswith("sm_") else 64 * 1024
    assert "asks for 1048576 bytes of dynamic shared memory a block" in line, line
    assert line.endswith("has at most %d" % limit), line


@pytest.mark.parametrize("arch", ARCHS)
def test_a_task_in_a_target_region_and_a_conditional_lastprivate_run(offload, arch):
    # OpenMP_VV's test_task_target_default_firstprivate.c and
    # test_target_parallel_for_lastprivate_conditional.c in small.
    run_ok(offload, TASK_AND_CONDITIONAL, arch, "task_conditional.c", "task 45 last 94\n")


STOCK_GRID = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int teams = 0, threads = 0, count[128] = {0};
#pragma omp target teams distribute parallel for map(tofrom : teams, threads, count)
  for (int i = 0; i < 128; ++i) {
    if (i == 0) {
      teams = omp_get_num_teams();
      threads = omp_get_num_threads();
    }
    count[i] += 1;
  }
  int once = 1;
  for (int i = 0; i < 128; ++i)
    once &= count[i] == 1;
  printf("%d %d %d\n", teams, threads, once);
  return 0;
}
"""

DIVERGENT_BARRIER = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int sum = 0;
#pragma omp target teams num_teams(1) thread_limit(128) map(tofrom : sum)
  {
    sum = 1; /* a generic kernel: the team's main thread runs this */
#pragma omp parallel num_threads(32)
    {
      if (omp_get_thread_num() < 8) {
#pragma omp barrier
      }
    }
  }
  printf("%d\n", sum);
  return 0;
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_a_loop_without_clauses_gets_the_grid_stocks_gpu_plugins_give_it(offload, arch):
    # 128 iterations: stock's CUDA and AMDGPU plugins give 4 blocks of 32 threads (their
    # LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT); every iteration still runs once.
    r = run_ok(offload, STOCK_GRID, arch, "grid.c", "4 32 1\n", env={"LIBOMPTARGET_INFO": "16"})
    assert "with [4,1,1] blocks and [32,1,1] threads in SPMD mode" in r.stderr, r.stderr


@pytest.mark.parametrize("arch", ARCHS)
def test_a_barrier_some_threads_of_a_team_never_reach_is_named_not_a_hang(offload, arch):
    # 8 of a parallel region's 32 threads wait at its barrier; the others have left the region.
    exe = offload.compile(DIVERGENT_BARRIER, name="divergent.c", translate="pass", extra=["--gpu=" + arch, "-O0"])
    r = offload.run(exe, backend="sim")
    assert r.returncode != 0, (r.stdout, r.stderr)
    # The region's other threads wait at its end, the block's others for work
    # (tests/gpu_checks/test_barriers.py has the whole line).
    assert re.search(r"ompsim: device 0: kernel __omp_offloading_\w+: block 0: a barrier can never complete: "
                     r"threads 0-7 wait at the barrier at \S*divergent\.c:12:1 \(a barrier of 32 threads\); "
                     r"threads 8-31 wait at the end of the parallel region at \S*divergent\.c:9:1; ",
                     r.stderr), r.stderr


@pytest.mark.parametrize("arch", ARCHS)
def test_the_earlier_libomp_model_stays_selectable(offload, arch):
    # OMPSIM_GPU_FIBERS=0: the launch's teams on libomp's threads, one team when the clauses
    # name none.
    r = run_ok(offload, STOCK_GRID, arch, "grid.c", "1 %s 1\n" % ("128" if arch == "sm_90" else "256"),
               env={"OMPSIM_GPU_FIBERS": "0", "OMPSIM_DEVICE_THREADS": "256"})
    assert r.returncode == 0


STATIC_LOOP_ENTRIES = r"""
#include <omp.h>
#include <stdio.h>
#pragma omp begin declare target
extern void __kmpc_for_static_loop_4u(void *, void (*)(unsigned, void *), void *, unsigned, unsigned, unsigned,
                                      unsigned char);
extern void __kmpc_distribute_static_loop_4u(void *, void (*)(unsigned, void *), void *, unsigned, unsigned,
                                             unsigned char);
__attribute__((noinline)) static void byThread(unsigned I, void *A) { ((int *)A)[I] = omp_get_thread_num(); }
__attribute__((noinline)) static void byTeam(unsigned I, void *A) { ((int *)A)[I] = omp_get_team_num(); }
#pragma omp end declare target
#if !defined(__NVPTX__) && !defined(__AMDGCN__) /* the host's fallback copies, never run */
void __kmpc_for_static_loop_4u(void *L, void (*F)(unsigned, void *), void *A, unsigned N, unsigned T, unsigned C,
                               unsigned char O) {}
void __kmpc_distribute_static_loop_4u(void *L, void (*F)(unsigned, void *), void *A, unsigned N, unsigned C,
                                      unsigned char O) {}
#endif
int main(void) {
  int tid[10], team[10];
#pragma omp target teams num_teams(1) thread_limit(4) map(from : tid)
#pragma omp parallel num_threads(4)
  __kmpc_for_static_loop_4u(0, byThread, tid, 10, 4, /*ThreadChunk=*/2, 0);
#pragma omp target teams num_teams(3) map(from : team)
  __kmpc_distribute_static_loop_4u(0, byTeam, team, 10, /*BlockChunk=*/0, 0);
  for (int i = 0; i < 10; ++i)
    printf("%d", tid[i]);
  printf(" ");
  for (int i = 0; i < 10; ++i)
    printf("%d", team[i]);
  printf("\n");
  return 0;
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_the_static_loop_entries_deal_chunks_to_threads_and_teams(offload, arch):
    # OpenMPIRBuilder's *_static_loop entries (flang-22 emits them): chunks of 2 round-robin
    # over 4 threads; 10 iterations over 3 teams in contiguous pieces of 4.
    run_ok(offload, STATIC_LOOP_ENTRIES, arch, "static_loop.c", "0011223300 0000111122\n")


FORTRAN = r"""
program main
  use omp_lib
  implicit none
  integer, parameter :: n = 1000
  integer :: a(n), i, s, threads, teams, first, last
  s = 0
  !$omp target teams distribute parallel do map(from: a) reduction(+: s)
  do i = 1, n
    a(i) = 2 * i
    s = s + i
  end do
  !$omp target parallel map(from: threads)
    threads = omp_get_num_threads()
  !$omp end target parallel
  !$omp target teams num_teams(3) map(from: teams)
    teams = omp_get_num_teams()
  !$omp end target teams
  ! flang-22 makes this an SPMD kernel whose every thread meets the team's parallel region,
  ! which if(.false.) serializes: a team of one runs each iteration once.
  first = a(1)
  last = a(n)
  a = 0
  !$omp target teams distribute parallel do if(parallel: threads < 0) num_threads(8) map(tofrom: a)
  do i = 1, n
    !$omp atomic
    a(i) = a(i) + 1
  end do
  print '(a, i0, 1x, i0, 1x, i0, 1x, l1, 1x, i0, 1x, i0)', 'fortran ', first, last, s, threads > 1, teams, &
      count(a == 1)
end program main
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_fortran_runs_on_the_virtual_gpu(offload, arch):
    # flang-22 has no -fopenmp-target-jit: `ompsim cc` runs its jobs with the device code kept
    # as the GPU's IR (scripts/lib/ompsim_cli/fortran_gpu.py), and sim runs flang's GPU code
    # on the GPU device runtime (the OpenMPIRBuilder's kernels and loop entries).
    exe = build(offload, FORTRAN, arch, "prog.f90")
    r = subprocess.run([paths.tool("llvm-objdump"),
                       "--offloading", str(exe)], stdout=subprocess.PIPE, text=True)
    assert "llvm ir" in r.stdout and ("nvptx64" if arch.startswith("sm_") else "amdgcn") in r.stdout, r.stdout
    r = offload.run(exe, backend="sim")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["fortran", "2", "2000", "500500", "T", "3", "1000"], (r.stdout, r.stderr)


REGION_SIZES = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int n1[64] = {0}, n2[64] = {0}, lvl[64] = {0};
#pragma omp target teams num_teams(2) thread_limit(64) map(tofrom : n1, n2, lvl)
  {
#pragma omp parallel num_threads(64)
    if (omp_get_team_num() == 1) n1[omp_get_thread_num()] = omp_get_num_threads();
#pragma omp parallel num_threads(16)
    if (omp_get_team_num() == 1) {
      n2[omp_get_thread_num()] = omp_get_num_threads();
      lvl[omp_get_thread_num()] = omp_get_level();
    }
  }
  int ok = 1;
  for (int i = 0; i < 64; ++i) ok &= n1[i] == 64 && (i < 16 ? n2[i] == 16 && lvl[i] == 1 : n2[i] == 0);
  printf("ok=%d %d %d %d\n", ok, n1[63], n2[15], n2[16]);
  return 0;
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_each_parallel_region_of_an_spmd_kernel_has_its_own_size(offload, arch):
    # The region's size and level are each thread's own in SPMD mode: the second region, of 16
    # threads, leaves the block's other threads at level 0.
    run_ok(offload, REGION_SIZES, arch, "regions.c", "ok=1 64 16 0\n")


DO_CONCURRENT = r"""
subroutine saxpy(a, x, y, n)
  implicit none
  integer, intent(in) :: n
  real, intent(in) :: a, x(:)
  real, intent(inout) :: y(:)
  integer :: i
  do concurrent (i = 1:n)
    y(i) = a * x(i) + y(i)
  end do
end subroutine saxpy

program main
  implicit none
  interface
    subroutine saxpy(a, x, y, n)
      integer, intent(in) :: n
      real, intent(in) :: a, x(:)
      real, intent(inout) :: y(:)
    end subroutine saxpy
  end interface
  real :: x(16), y(16)
  x = 1
  y = 2
  call saxpy(2.0, x, y, 16)
  print *, y(1)
end program main
"""


def test_an_amdgcn_image_keeping_32_bit_private_pointers_in_memory_is_refused_with_one_line(offload):
    # flang-22 hands the parallel region of a `do concurrent` offloaded to an AMD GPU the
    # addresses of its private bounds as 32-bit private pointers in a struct laid out for them;
    # the simulated GPU's pointers are 64-bit, so sim names the function instead of corrupting it.
    exe = offload.compile(DO_CONCURRENT, name="saxpy.f90", translate="pass",
                          extra=["--gpu=gfx90a", "-fdo-concurrent-to-openmp=device"])
    r = offload.run(exe, backend="sim")
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.startswith("ompsim:")]
    assert len(lines) == 1, r.stderr
    assert "(amdgcn): function '" in lines[0] and "keeps 32-bit pointers of address space 5 (private)" in lines[0], \
        lines[0]


SEQUENTIAL_PART = r"""
program main
  integer :: array(10) = 0
  integer :: x, z
  !$omp target
  !$omp teams distribute
  do x = 1, 1
    array(2) = 42
    !$omp parallel do
    do z = 1, 10
      array(z) = 20
    end do
    !$omp end parallel do
  end do
  !$omp end teams distribute
  !$omp end target
  print '(10(i0, 1x))', array
end program main
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_the_sequential_part_every_spmd_thread_runs_ends_before_the_parallel_region(offload, arch):
    # flang-22 makes this a Generic-SPMD kernel whose every thread stores 42, then runs its part
    # of the loop: no thread's 42 may land after another thread's 20.
    run_ok(offload, SEQUENTIAL_PART, arch, "seq.f90", "20 20 20 20 20 20 20 20 20 20\n")


GENERIC_REGIONS = r"""
program main
  integer :: i, counter
  counter = 0
  !$omp target map(tofrom: counter)
    counter = counter + 1
    !$omp parallel do reduction(+: counter)
    do i = 1, 100
      counter = counter + 1
    end do
    counter = counter + 1
    !$omp parallel do reduction(+: counter)
    do i = 1, 100
      counter = counter + 1
    end do
    counter = counter + 1
  !$omp end target
  print '(i0)', counter
end program main
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_a_generic_kernels_regions_without_a_wrapper_run_on_the_workers(offload, arch):
    # flang-22 makes this a generic kernel whose __kmpc_parallel_60 calls pass no wrapper; the
    # runtime's workers then call the outlined region itself (before, they took the missing
    # wrapper for the kernel's end, and the regions never ran).
    run_ok(offload, GENERIC_REGIONS, arch, "generic.f90", "203\n")


# Four kernels with 20 KiB of team-shared memory each: 80 KiB in the image, more than a block
# has on either GPU, but each kernel within the limit, as ptxas and the AMDGPU backend check it.
KERNELS_SHARING_AN_IMAGE = r"""
#include <omp.h>
#include <stdio.h>
#define N 5120
#define TEAMS 3
#define KERNEL(K)                                                                              \
  static void kernel##K(int *out) {                                                            \
    _Pragma("omp target teams num_teams(TEAMS) thread_limit(64) map(from : out[0 : TEAMS])")   \
    {                                                                                          \
      static int tile[N];                                                                      \
      _Pragma("omp allocate(tile) allocator(omp_pteam_mem_alloc)")                             \
      int team = omp_get_team_num();                                                           \
      _Pragma("omp parallel num_threads(64)")                                                  \
      for (int i = omp_get_thread_num(); i < N; i += 64)                                       \
        tile[i] = i * (K + 1) + team;                                                          \
      long sum = 0;                                                                            \
      for (int i = 0; i < N; ++i)                                                              \
        sum += tile[i];                                                                        \
      out[team] = (int)(sum % 1000003);                                                        \
    }                                                                                          \
  }
KERNEL(0)
KERNEL(1)
KERNEL(2)
KERNEL(3)
int main(void) {
  int out[4][TEAMS], wrong = 0;
  kernel0(out[0]);
  kernel1(out[1]);
  kernel2(out[2]);
  kernel3(out[3]);
  for (int k = 0; k < 4; ++k)
    for (int t = 0; t < TEAMS; ++t) {
      long sum = 0;
      for (int i = 0; i < N; ++i)
        sum += i * (k + 1) + t;
      wrong += out[k][t] != (int)(sum % 1000003);
    }
  printf("wrong %d\n", wrong);
  return 0;
}
"""

# One kernel with 68000 bytes of team-shared memory: more than a block has on either GPU.
A_KERNEL_OVER_THE_SHARED_LIMIT = r"""
#include <omp.h>
#include <stdio.h>
static void too_big(int *out) {
#pragma omp target teams num_teams(2) map(from : out[0 : 2])
  {
    static int tile[17000];
#pragma omp allocate(tile) allocator(omp_pteam_mem_alloc)
    int team = omp_get_team_num();
    for (int i = 0; i < 17000; ++i)
      tile[i] = i + team;
    out[team] = tile[16999];
  }
}
int main(void) {
  int out[2] = {0, 0};
  too_big(out);
  printf("%d %d\n", out[0], out[1]);
  return 0;
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_kernels_each_within_the_shared_memory_limit_load_together(offload, arch):
    # The limit was checked over the whole image's team-shared globals (81984 bytes here).
    run_ok(offload, KERNELS_SHARING_AN_IMAGE, arch, "four_kernels.c", "wrong 0\n")


@pytest.mark.parametrize("arch", ARCHS)
def test_a_kernel_over_the_shared_memory_limit_is_refused_naming_it(offload, arch):
    line = single_line(offload.run(build(offload, A_KERNEL_OVER_THE_SHARED_LIMIT, arch, "too_big.c"),
                                   backend="sim"))
    gpu, limit = ("nvptx64", 49152) if arch.startswith("sm_") else ("amdgcn", 65536)
    assert "image #1 (%s): kernel '__omp_offloading_" % gpu in line, line
    assert line.endswith("_too_big_l5' needs 68000 bytes of team-shared globals a team (its own and its "
                         "callees'); %s gives a block at most %d" % (gpu, limit)), line


WHICH_GPU = r"""
#include <stdio.h>
int main(void) {
  int kind = 0;
#pragma omp target map(from : kind)
  {
    int k = 0; /* kind is written on every compile: the host's region captures it too */
#if defined(__NVPTX__)
    k = 1;
#elif defined(__AMDGCN__)
    k = 2;
#endif
    kind = k;
  }
  printf("%s\n", kind == 1 ? "nvptx64" : kind == 2 ? "amdgcn" : "host");
  return 0;
}
"""


def test_a_binary_for_both_gpus_runs_the_first_image_or_the_one_the_backend_names(offload):
    # One image of a binary per device, as stock's registration has it: without OMPSIM_SIM_GPU
    # the first (nvptx64, as --gpu lists it) runs; sim-amdgcn's OMPSIM_SIM_GPU declines it.
    exe = build(offload, WHICH_GPU, "sm_90,gfx90a", "which_gpu.c")
    for backend, env, expected in (("sim", None, "nvptx64\n"), ("sim-nvptx", None, "nvptx64\n"),
                                   ("sim-amdgcn", None, "amdgcn\n"), ("sim", {"OMPSIM_SIM_GPU": "amdgcn"}, "amdgcn\n")):
        r = offload.run(exe, backend=backend, env=env)
        assert (r.returncode, r.stdout) == (0, expected), (backend, env, r.stdout, r.stderr)
    r = offload.run(exe, backend="sim-amdgcn", env={"OMPSIM_TRACE": "image"})
    assert re.search(r"decline.*nvptx64-nvidia-cuda.*the simulated device is an amdgcn GPU \(OMPSIM_SIM_GPU=amdgcn\)",
                     r.stderr), r.stderr


def test_a_binary_for_two_architectures_of_one_gpu_loads_one_image(offload):
    # Both images are the device's; stock loads the first, and so does sim (two loaded would map
    # each global twice).
    exe = build(offload, WHICH_GPU, "sm_80,sm_90", "two_nvidia.c")
    r = offload.run(exe, backend="sim", env={"OMPSIM_TRACE": "image"})
    assert (r.returncode, r.stdout) == (0, "nvptx64\n"), r.stderr
    assert re.search(r"duplicate.*device image 1 of .*two_nvidia.*device image 0 of", r.stderr), r.stderr


def test_a_binary_for_one_gpu_on_the_others_column_says_why_it_did_not_run(offload):
    exe = build(offload, WHICH_GPU, "sm_90", "nvptx_only.c")
    r = offload.run(exe, backend="sim-amdgcn")
    assert r.returncode != 0 and r.stdout == ""
    assert "no plugin accepted device image 0 of %s (LLVM bitcode for nvptx64-nvidia-cuda; the simulated device " \
           "is an amdgcn GPU (OMPSIM_SIM_GPU=amdgcn))" % exe in r.stderr, r.stderr


def test_an_unknown_sim_gpu_is_named_and_ignored(offload):
    exe = build(offload, WHICH_GPU, "gfx90a", "unknown_sim_gpu.c")
    r = offload.run(exe, backend="sim", env={"OMPSIM_SIM_GPU": "sm_90"})
    assert (r.returncode, r.stdout) == (0, "amdgcn\n"), r.stderr
    assert "ompsim: ignoring OMPSIM_SIM_GPU='sm_90': not a GPU the simulated device runs (expected nvptx64 or " \
           "amdgcn)" in r.stderr
