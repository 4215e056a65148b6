"""The device-runtime entry points flang-22's device code calls, kept as a list.

`gpu_abi_entry_points.txt` names every `__kmpc_` symbol the device images of
OpenMP_VV's and LLVM offload/test's Fortran programs leave undefined (collected
from their images, built with `ompsim cc`), with the library that defines it:
libompsim-device (the GPU device-runtime ABI) or libomp (the host ABI flang
also calls). A listed entry point either library lacks fails here; so does a
libompsim-device export that libomp also has (device code of clang's kernels
would bind to it instead of libomp's). A program whose device code calls an
entry point no library has fails to build with one line naming both.
"""
import os
import re
import subprocess

import pytest

from ompsim_base import paths

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "gpu_abi_entry_points.txt")
OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")
LIBOMP = os.path.join(paths.LLVM_LIB, "libomp.so.5")
PROVIDERS = {"libompsim-device": paths.DEVICE_RUNTIME, "libomp": LIBOMP}


def entry_points():
    """(symbol, provider) pairs of the list."""
    pairs = []
    with open(LIST) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                symbol, provider = line.split()
                assert provider in PROVIDERS, "%s: unknown provider %s" % (symbol, provider)
                pairs.append((symbol, provider))
    return pairs


def exports(library):
    if not os.path.exists(library):
        pytest.skip("%s is not built" % library)
    out = subprocess.run([paths.tool("llvm-nm"), "-D", "--defined-only", library],
                         capture_output=True, text=True, check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def test_list_names_the_gpu_abi():
    symbols = {s for s, _ in entry_points()}
    for needed in ("__kmpc_target_init", "__kmpc_parallel_60", "__kmpc_distribute_static_loop_4u",
                   "__kmpc_distribute_for_static_loop_4u", "__kmpc_for_static_loop_4u"):
        assert needed in symbols


@pytest.mark.parametrize("symbol,provider", entry_points())
def test_entry_point_is_provided(symbol, provider):
    assert symbol in exports(PROVIDERS[provider]), "%s does not define %s" % (provider, symbol)


def test_all_integer_kinds_of_the_loops():
    have = exports(paths.DEVICE_RUNTIME)
    for loop in ("for_static_loop", "distribute_static_loop", "distribute_for_static_loop"):
        for kind in ("4", "4u", "8", "8u"):
            assert "__kmpc_%s_%s" % (loop, kind) in have


def test_device_runtime_shadows_nothing_of_libomp():
    shared = exports(paths.DEVICE_RUNTIME) & exports(LIBOMP)
    assert not shared, "libompsim-device also exports libomp's %s" % sorted(shared)


@pytest.mark.e2e
def test_missing_entry_point_fails_the_build_with_one_line(tmp_path):
    src = tmp_path / "calls_missing.c"
    src.write_text("void __kmpc_ompsim_not_an_entry_point(void);\n"
                   "int main(void) {\n  int r = 0;\n#pragma omp target map(from: r)\n"
                   "  { __kmpc_ompsim_not_an_entry_point(); r = 1; }\n  return r == 1 ? 0 : 1;\n}\n")
    prog = tmp_path / "calls_missing"
    # The failed link leaves clang-linker-wrapper's temporary files: in the test's folder.
    proc = subprocess.run([OMPSIM, "cc", str(src), "-o", str(prog)], capture_output=True, text=True,
                          env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert proc.returncode != 0
    lines = [l for l in proc.stderr.splitlines() if l.startswith("ompsim: cc:")]
    assert lines == ["ompsim: cc: %s: device code calls __kmpc_ompsim_not_an_entry_point, which ompsim's "
                     "device runtime (libompsim-device) does not provide" % prog], proc.stderr
