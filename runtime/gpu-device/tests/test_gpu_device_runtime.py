"""ompsim's GPU device runtime (runtime/gpu-device): Debian's clang-22 ships no OpenMP device
runtime for GPUs, so `clang-22 -fopenmp --offload-arch=sm_90 prog.c` fails to link. With the
runtime's bitcode libraries (build/lib/<triple>/) plain clang-22 links GPU offload programs:
for NVIDIA with LIBRARY_PATH naming the folder, for AMD with the flags docs/gpu-device-runtime.md
gives. These tests link real programs both ways and check what the runtime defines. No GPU runs
them here (CI has none); docs/gpu-device-runtime.md says what a GPU run would add."""
import os
import shutil
import subprocess

import pytest

from ompsim_base import gpu, paths, toolchain

pytestmark = pytest.mark.e2e

NVPTX_DIR = os.path.join(paths.LIB, "nvptx64-nvidia-cuda")
AMDGCN_DIR = os.path.join(paths.LIB, "amdgcn-amd-amdhsa")

# Every kind of device-runtime call clang-22's GPU codegen makes for common OpenMP: kernels in
# generic and SPMD mode, parallel regions (nested too), the loop schedules, reductions across
# threads and teams, critical/single/masked/barrier, locks, tasks, and the device API.
KITCHEN_SINK = r"""
#include <omp.h>
#include <ompx.h>
#include <stdio.h>
#pragma omp declare target
static int twice(int x) { return 2 * x; }
#pragma omp end declare target
int main(void) {
  enum { N = 4096 };
  static double a[N];
  double sum = 0;
  long count = 0;
#pragma omp target teams distribute parallel for map(from : a) reduction(+ : sum)
  for (int i = 0; i < N; ++i) {
    a[i] = twice(i);
    sum += a[i];
  }
  int info[8] = {0};
#pragma omp target teams num_teams(4) map(tofrom : info, count)
  {
    int team = omp_get_team_num();
#pragma omp parallel num_threads(64) reduction(+ : count)
    {
#pragma omp for schedule(dynamic, 3)
      for (int i = 0; i < 100; ++i) count += i;
#pragma omp for schedule(guided)
      for (int i = 0; i < 100; ++i) count += 1;
#pragma omp single
      info[0] = omp_get_num_threads();
#pragma omp critical
      info[1] += 1;
#pragma omp barrier
#pragma omp masked
      info[2] = omp_get_level() + omp_in_parallel();
#pragma omp parallel
      info[3] = omp_get_num_threads();
    }
    omp_lock_t lock;
    omp_init_lock(&lock);
    omp_set_lock(&lock);
    info[4] += team;
    omp_unset_lock(&lock);
    omp_destroy_lock(&lock);
    int t = 0;
#pragma omp parallel num_threads(2) shared(t)
#pragma omp single
    {
#pragma omp task shared(t)
      t = 1;
#pragma omp taskwait
#pragma omp taskgroup
      {
#pragma omp taskloop shared(t)
        for (int i = 0; i < 4; ++i) t += 0;
      }
    }
    info[5] = t + omp_get_device_num() + omp_is_initial_device() + (int)omp_get_wtime() * 0;
    info[6] = ompx_block_dim_x() + ompx_thread_id_x() + ompx_grid_dim_x();
#if !defined(__AMDGCN__)
    if (team == 0)
      printf("team %d of %d\n", team, omp_get_num_teams());
#endif
  }
  printf("%g %ld %d %d\n", sum, count, info[0], info[5]);
  return 0;
}
"""

# What the runtime must define: the entry points clang-22's GPU codegen calls in the programs
# of LLVM's offload/test, OpenMP_VV and ompsim's conformance programs (measured over their
# device IR, docs/gpu-device-runtime.md), and the device API.
REQUIRED = """
__kmpc_target_init __kmpc_target_deinit __kmpc_parallel_60 __kmpc_parallel_51
__kmpc_get_shared_variables __kmpc_kernel_parallel __kmpc_kernel_end_parallel
__kmpc_global_thread_num __kmpc_get_hardware_thread_id_in_block
__kmpc_get_hardware_num_threads_in_block __kmpc_get_warp_size
__kmpc_for_static_init_4 __kmpc_for_static_init_4u __kmpc_for_static_init_8 __kmpc_for_static_init_8u
__kmpc_for_static_fini __kmpc_distribute_static_init_4 __kmpc_distribute_static_init_4u
__kmpc_distribute_static_init_8 __kmpc_distribute_static_init_8u __kmpc_distribute_static_fini
__kmpc_dispatch_init_4 __kmpc_dispatch_init_4u __kmpc_dispatch_init_8 __kmpc_dispatch_init_8u
__kmpc_dispatch_next_4 __kmpc_dispatch_next_4u __kmpc_dispatch_next_8 __kmpc_dispatch_next_8u
__kmpc_dispatch_fini_4 __kmpc_dispatch_fini_4u __kmpc_dispatch_deinit
__kmpc_nvptx_parallel_reduce_nowait_v2 __kmpc_nvptx_teams_reduce_nowait_v2
__kmpc_reduction_get_fixed_buffer __kmpc_shuffle_int32 __kmpc_shuffle_int64
__kmpc_alloc_shared __kmpc_free_shared __kmpc_barrier __kmpc_barrier_simple_spmd
__kmpc_barrier_simple_generic __kmpc_critical __kmpc_end_critical __kmpc_single __kmpc_end_single
__kmpc_master __kmpc_end_master __kmpc_masked __kmpc_end_masked __kmpc_ordered __kmpc_end_ordered
__kmpc_flush __kmpc_syncwarp __kmpc_warp_active_thread_mask __kmpc_error
__kmpc_omp_task_alloc __kmpc_omp_task __kmpc_omp_task_with_deps __kmpc_omp_taskwait
__kmpc_taskgroup __kmpc_end_taskgroup __kmpc_taskloop
__llvm_omp_indirect_call_lookup __assert_fail malloc free
omp_get_thread_num omp_get_num_threads omp_get_max_threads omp_get_team_num omp_get_num_teams
omp_get_level omp_get_active_level omp_in_parallel omp_get_thread_limit omp_get_device_num
omp_is_initial_device omp_get_wtime omp_init_lock omp_set_lock omp_unset_lock omp_test_lock
ompx_thread_id ompx_block_id ompx_block_dim ompx_grid_dim ompx_sync_block ompx_ballot_sync
ompx_shfl_down_sync_i ompx_shfl_down_sync_f ompx_shfl_down_sync_l ompx_shfl_down_sync_d
""".split()

# nvptx64: CUDA's own malloc, free and vprintf; amdgcn: the runtime's malloc and free.
PROVIDED_BY_CUDA = {"malloc", "free"}


def cuda_link_tools():
    """Why clang-22's nvptx link cannot run here, or None (it needs CUDA's ptxas and nvlink)."""
    missing = [t for t in ("ptxas", "nvlink")
               if not shutil.which(t) and not os.path.exists(os.path.join("/usr/local/cuda/bin", t))]
    return "CUDA's %s not installed: clang-22's nvptx link runs them" % " and ".join(missing) if missing else None


def clang_link(tmp_path, source, arch, flags, env_extra=None, name="prog.c"):
    src = tmp_path / name
    src.write_text(source)
    exe = tmp_path / (arch + ".exe")
    env = toolchain.environment()
    env.update(env_extra or {})
    # A failed offload link leaves clang's temporary objects behind: in the test's folder.
    env["TMPDIR"] = str(tmp_path)
    cmd = [paths.tool("clang"), "-fopenmp", "--offload-arch=" + arch, "-O2", str(src), "-o", str(exe), *flags]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=300,
                       cwd=tmp_path)
    return r, exe


def offload_images(exe):
    out = subprocess.run([paths.tool("llvm-objdump"), "--offloading", str(exe)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if line.split()[:1] in (["arch"], ["triple"], ["kind"])]


def nvptx_env():
    return {"LIBRARY_PATH": NVPTX_DIR + os.pathsep + os.environ.get("LIBRARY_PATH", "")}


AMDGCN_FLAGS = ["-nogpulib", "-Xoffload-linker", "-L" + AMDGCN_DIR, "-Xoffload-linker", "-lompdevice"]


def defined_symbols(archive):
    out = subprocess.run([paths.tool("llvm-nm"), "--defined-only", "--extern-only", archive],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if len(line.split()) >= 2}


@pytest.mark.parametrize("triple", ["nvptx64-nvidia-cuda", "amdgcn-amd-amdhsa"])
def test_the_runtime_defines_every_entry_point_gpu_code_calls(triple):
    defined = defined_symbols(os.path.join(paths.LIB, triple, "libompdevice.a"))
    required = set(REQUIRED) - (PROVIDED_BY_CUDA if triple.startswith("nvptx") else set())
    assert not required - defined, sorted(required - defined)


def test_the_nvptx_compile_step_module_defines_nothing():
    # Linked into every device translation unit by clang-22: a definition there would give
    # each unit its own copy of the block's state.
    assert defined_symbols(os.path.join(NVPTX_DIR, "libomptarget-nvptx.bc")) == set()


def test_plain_clang22_cannot_link_an_nvptx_program_without_a_device_runtime(tmp_path):
    r, _ = clang_link(tmp_path, KITCHEN_SINK, "sm_90", [])
    assert r.returncode != 0
    if gpu.cuda_installation():
        assert "libomptarget-nvptx.bc" in r.stdout or "-lompdevice" in r.stdout, r.stdout
    else:
        # A real GPU's link needs CUDA first (its libdevice, ptxas and nvlink).
        assert "cannot find libdevice for sm_90" in r.stdout, r.stdout


def test_plain_clang22_links_an_nvptx_program_with_ompsims_runtime(tmp_path):
    why = cuda_link_tools()
    if why:
        pytest.skip(why)
    r, exe = clang_link(tmp_path, KITCHEN_SINK, "sm_90", [], nvptx_env())
    assert r.returncode == 0, r.stdout
    images = offload_images(exe)
    assert ["arch", "sm_90"] in images and ["triple", "nvptx64-nvidia-cuda"] in images, images


def test_plain_clang22_links_an_amdgcn_program_with_ompsims_runtime(tmp_path):
    r, exe = clang_link(tmp_path, KITCHEN_SINK, "gfx90a", AMDGCN_FLAGS)
    assert r.returncode == 0, r.stdout
    images = offload_images(exe)
    assert ["arch", "gfx90a"] in images and ["triple", "amdgcn-amd-amdhsa"] in images, images


def test_amdgcn_device_printf_is_named_as_missing_not_dropped(tmp_path):
    # AMD's device printf needs ROCm's device libraries (hostcall); the runtime does not
    # pretend to print: the link fails naming printf.
    source = KITCHEN_SINK.replace("#if !defined(__AMDGCN__)", "#if 1")
    r, _ = clang_link(tmp_path, source, "gfx90a", AMDGCN_FLAGS)
    assert r.returncode != 0
    undefined = {line.split("undefined symbol: ")[1].strip() for line in r.stdout.splitlines()
                 if "undefined symbol: " in line}
    assert undefined == {"printf"}, r.stdout
