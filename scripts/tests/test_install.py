"""`cmake --install`: a relocatable tree whose bin/ompsim works from anywhere, and
whose find_package(ompsim) builds a third-party plugin that ompsim's runtime loads."""
import os
import shutil
import subprocess

import pytest

from ompsim_base import paths, toolchain

pytestmark = pytest.mark.e2e

PROGRAM = open(os.path.join(os.path.dirname(__file__), "programs", "add1_indirect.c")).read()

#: A third-party plugin built against the installed headers alone: one device
#: whose memory is host memory, and no image it can run.
PLUGIN = r"""
#include <ompsim/plugin_api.h>
#include <stdlib.h>
#include <string.h>

int32_t __tgt_rtl_plugin_api_version(void) { return OMPSIM_PLUGIN_API_VERSION; }
const char *__tgt_rtl_plugin_name(void) { return "hostmem"; }
int32_t __tgt_rtl_is_valid_binary(const __tgt_device_image *image) { return 0; }
int32_t __tgt_rtl_number_of_devices(void) { return 1; }
int32_t __tgt_rtl_init_device(int32_t id) { return OMPSIM_OFFLOAD_SUCCESS; }
int32_t __tgt_rtl_load_binary(int32_t id, const __tgt_device_image *image, ompsim_binary_handle *b) {
  return OMPSIM_OFFLOAD_FAIL;
}
int32_t __tgt_rtl_get_global(int32_t id, ompsim_binary_handle b, uint64_t size, const char *name,
                             void **p) { return OMPSIM_OFFLOAD_FAIL; }
int32_t __tgt_rtl_get_function(int32_t id, ompsim_binary_handle b, const char *name, void **k) {
  return OMPSIM_OFFLOAD_FAIL;
}
static int64_t allocated;
void *__tgt_rtl_data_alloc(int32_t id, int64_t size, void *host_ptr, int32_t kind) {
  allocated += size;
  return malloc((size_t)size);
}
int32_t __tgt_rtl_data_delete(int32_t id, void *p, int32_t kind) { free(p); return OMPSIM_OFFLOAD_SUCCESS; }
int32_t __tgt_rtl_data_submit(int32_t id, void *t, const void *h, int64_t n) {
  /* Stores every byte plus one, so a round trip proves the data went through here. */
  for (int64_t i = 0; i < n; ++i) ((unsigned char *)t)[i] = ((const unsigned char *)h)[i] + 1;
  return OMPSIM_OFFLOAD_SUCCESS;
}
int32_t __tgt_rtl_data_retrieve(int32_t id, void *h, const void *t, int64_t n) {
  memcpy(h, t, (size_t)n);
  return OMPSIM_OFFLOAD_SUCCESS;
}
int32_t __tgt_rtl_run_target_region(int32_t id, void *k, void **args, int32_t n,
                                    const ompsim_launch_config *c) { return OMPSIM_OFFLOAD_FAIL; }
const char *__tgt_rtl_last_error(int32_t id) { return ""; }
"""

PLUGIN_CMAKE = """
cmake_minimum_required(VERSION 3.20)
project(hostmem C)
find_package(ompsim 0.1 REQUIRED)
add_library(hostmem SHARED hostmem.c)
target_link_libraries(hostmem PRIVATE ompsim::plugin_api)
"""

DATA_PROGRAM = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  char in[4] = {'a', 'b', 'c', 0}, out[4] = {0};
  int dev = 0;
  char *d = omp_target_alloc(sizeof in, dev);
  if (!d) { printf("no device memory\n"); return 1; }
  omp_target_memcpy(d, in, 3, 0, 0, dev, omp_get_initial_device());
  omp_target_memcpy(out, d, 3, 0, 0, omp_get_initial_device(), dev);
  omp_target_free(d, dev);
  printf("%d devices, %s\n", omp_get_num_devices(), out);
  return 0;
}
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """An install, moved after installing (so every path in it must be relative)."""
    if not os.path.exists(paths.RUNTIME):
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)
    base = tmp_path_factory.mktemp("install")
    r = subprocess.run(["cmake", "--install", paths.BUILD, "--prefix", str(base / "first")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    moved = base / "moved"
    os.rename(base / "first", moved)
    return moved


def clean_env():
    """The user's environment: nothing that points into the checkout."""
    env = toolchain.environment()
    for k in ("OMPSIM_BUILD_DIR", "OMPSIM_LIB_DIR", "OMPSIM_EXECUTOR", "PYTHONPATH", "LD_LIBRARY_PATH"):
        env.pop(k, None)
    return env


def run(cmd, cwd, env=None, timeout=600):
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


def test_installed_ompsim_compiles_and_runs_from_anywhere(installed, tmp_path):
    ompsim = installed / "bin" / "ompsim"
    (tmp_path / "p.c").write_text(PROGRAM)
    r = run([ompsim, "cc", "p.c", "-o", "p"], tmp_path)
    assert r.returncode == 0, r.stdout
    for backend in ("sim", "ours-host"):
        r = run([ompsim, "run", "--backend", backend, "--", "./p"], tmp_path)
        assert (r.returncode, r.stdout) == (0, "42\n"), (backend, r.stdout)
    # The program's device runtime and ompsim's own libraries come from the install.
    r = run([ompsim, "run", "--backend", "sim", "--", "sh", "-c", "echo $LD_PRELOAD $OMPSIM_LIB_DIR"], tmp_path)
    assert str(installed) in r.stdout and paths.ROOT not in r.stdout, r.stdout
    r = run([ompsim, "inspect", "./p"], tmp_path)
    assert r.returncode == 0 and "add1" in r.stdout, r.stdout


OMPX_PROGRAM = r"""
#include <ompx.h>
#include <stdio.h>
int main(void) {
  int blocks[3] = {0};
#pragma omp target teams num_teams(3) map(tofrom : blocks)
  blocks[ompx_block_id_x()] = ompx_grid_dim_x();
  printf("%d %d %d\n", blocks[0], blocks[1], blocks[2]);
  return 0;
}
"""


def test_installed_ompsim_cc_uses_the_installed_ompx_header(installed, tmp_path):
    # ompsim's <ompx.h> (docs/ompx.md) comes from the install, not the checkout.
    (tmp_path / "x.c").write_text(OMPX_PROGRAM)
    r = run([installed / "bin" / "ompsim", "cc", "x.c", "-o", "x", "-###"], tmp_path)
    assert r.returncode == 0, r.stdout
    header_dir = installed / "share" / "ompsim" / "runtime" / "device" / "ompx" / "include"
    assert (header_dir / "ompx.h").is_file() and str(header_dir) in r.stdout, r.stdout
    assert paths.OMPX_INCLUDE not in r.stdout, r.stdout
    # So does the device math header it force-includes (docs/device-math.md).
    math_header = installed / "share" / "ompsim" / "runtime" / "device" / "math" / "include" / "__ompsim_device_math.h"
    assert math_header.is_file() and str(math_header) in r.stdout, r.stdout
    assert paths.DEVICE_MATH_HEADER not in r.stdout, r.stdout
    r = run([installed / "bin" / "ompsim", "cc", "x.c", "-o", "x"], tmp_path)
    assert r.returncode == 0, r.stdout
    r = run([installed / "bin" / "ompsim", "run", "--backend", "sim", "--", "./x"], tmp_path)
    assert (r.returncode, r.stdout) == (0, "3 3 3\n"), r.stdout


def test_every_subcommand_of_the_installed_ompsim_runs(installed, tmp_path):
    ompsim = installed / "bin" / "ompsim"
    for sub in ("cc", "run", "inspect", "trace", "matrix", "bench", "selfcheck"):
        r = run([ompsim, sub, "--help"], tmp_path)
        assert r.returncode == 0 and r.stdout, (sub, r.stdout)
    r = run([ompsim, "matrix", "--backend", "sim", "--translate", "pass", "--program", "declare_target_to_indirect",
             "-j", "1"], tmp_path)
    assert r.returncode == 0, r.stdout
    assert (tmp_path / "ompsim-matrix-out" / "results.json").exists()


def test_out_of_tree_plugin_builds_with_find_package_and_loads(installed, tmp_path):
    src = tmp_path / "plugin"
    src.mkdir()
    (src / "hostmem.c").write_text(PLUGIN)
    (src / "CMakeLists.txt").write_text(PLUGIN_CMAKE)
    r = run(["cmake", "-S", src, "-B", tmp_path / "b", "-G", "Ninja", "-DCMAKE_PREFIX_PATH=%s" % installed,
             "-DCMAKE_C_COMPILER=" + toolchain.tool("clang")], tmp_path)
    assert r.returncode == 0, r.stdout
    r = run(["cmake", "--build", tmp_path / "b"], tmp_path)
    assert r.returncode == 0, r.stdout
    plugin = tmp_path / "b" / "libhostmem.so"
    assert plugin.exists()

    (tmp_path / "d.c").write_text(DATA_PROGRAM)
    r = run([installed / "bin" / "ompsim", "cc", "d.c", "-o", "d"], tmp_path)
    assert r.returncode == 0, r.stdout
    env = clean_env()
    env["LD_PRELOAD"] = str(installed / "lib" / "ompsim" / "lib" / "runtime" / "libomptarget.so.22.1")
    env["OMPSIM_PLUGINS"] = str(plugin)
    r = run(["./d"], tmp_path, env=env)
    # Every byte went through the plugin's submit (+1) and came back.
    assert (r.returncode, r.stdout) == (0, "1 devices, bcd\n"), r.stdout


@pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja not installed")
def test_installed_headers_compile_alone(installed, tmp_path):
    (tmp_path / "h.c").write_text("#include <ompsim/plugin_api.h>\nint main(void) { return 0; }\n")
    r = run([toolchain.tool("clang"), "-Werror", "-Wall", "-I%s" % (installed / "include"), "-c", "h.c"], tmp_path)
    assert r.returncode == 0, r.stdout
