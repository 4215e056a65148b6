"""End to end: programs built with `ompsim cc`, run on ompsim's backends.

With --translate=pass every indirect call in device code reaches the device
copy of its target (proved by a declare-target counter only device copies
bump). On the sim, the same programs built with --translate=native fail with
one diagnostic line naming the first host function or vtable used
untranslated, except a function pointer captured as a scalar, which the
runtime's mapping table translates.
"""
import os
import random
import re

import pytest

from ompsim_base import paths

pytestmark = pytest.mark.e2e

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
EXTRA = ["-I", PROGRAMS, "-Wno-openmp-mapping"]

#: program -> (device calls it makes, the diagnostic a native build gets on the sim:
#: a regex naming the first host address the device code uses untranslated)
CASES = {
    # global_table is declare target: its device copy is initialized with device
    # addresses, so the first untranslated call is local_table[0] (sub3).
    "fptr_arrays.cpp": (9, r"called untranslated host function pointer .*'sub3\(int\)'"),
    "member_pointers.cpp": (2, r"called untranslated host function pointer .*scale"),
    # The mapped object's vptr is the host's: the first slot read faults.
    "virtual_calls.cpp": (4, r"read host data at .*'vtable for Dog\+0x10'"),
    "many_indirect.cpp": (None, r"called untranslated host function pointer .*indirect_fn_"),
    "scalar_capture.cpp": (1, None),
}

NUM_FUNCTIONS = 320
NUM_CALLS = 2048


def generate_many_indirect(path):
    """320 indirect functions called in random order from teams distribute parallel for."""
    rng = random.Random(4242)
    lines = ['#include "common.h"', "#include <cstdlib>"]
    for i in range(NUM_FUNCTIONS):
        lines.append("int indirect_fn_%d(int x) {\n#pragma omp atomic\n  ++device_calls;\n"
                     "  return x * %d + %d;\n}" % (i, rng.randrange(1, 9), i))
    names = ", ".join("indirect_fn_%d" % i for i in range(NUM_FUNCTIONS))
    lines.append("#pragma omp declare target to(%s) indirect" % names)
    lines.append("typedef int (*fn_t)(int);")
    lines.append("fn_t table[%d] = {%s};" % (NUM_FUNCTIONS, names))
    order = [rng.randrange(NUM_FUNCTIONS) for _ in range(NUM_CALLS)]
    lines.append("int order[%d] = {%s};" % (NUM_CALLS, ", ".join(map(str, order))))
    lines.append(r"""
int main() {
  reset_device_calls();
  static int out[%(n)d];
  fn_t *tbl = table;
#pragma omp target teams distribute parallel for map(to: tbl[0:%(f)d], order[0:%(n)d]) map(from: out[0:%(n)d])
  for (int j = 0; j < %(n)d; ++j)
    out[j] = tbl[order[j]](j);
  int bad = 0;
  for (int j = 0; j < %(n)d; ++j)
    if (out[j] != table[order[j]](j)) { if (bad < 5) std::printf("out[%%d]=%%d\n", j, out[j]); ++bad; }
  report_device_calls(%(n)d);
  return bad != 0;
}""" % {"n": NUM_CALLS, "f": NUM_FUNCTIONS})
    path.write_text("\n".join(lines) + "\n")
    return path


def source_for(name, tmp_path):
    if name == "many_indirect.cpp":
        return str(generate_many_indirect(tmp_path / name))
    return os.path.join(PROGRAMS, name)


def require_backend(backend):
    """Skips unless ompsim's runtime and the backend's plugin are built."""
    needed = [paths.RUNTIME, paths.DEVICE_RUNTIME, paths.PASS_PLUGIN]
    needed.append(os.path.join(paths.LIB, "libompsim-plugin-%s.so" % ("sim" if backend == "sim" else "host")))
    for f in needed:
        if not os.path.exists(f):
            pytest.skip("backend %s needs %s, which is not built" % (backend, f))


def device_calls(stdout):
    m = re.search(r"device_calls=(\d+) expected=(\d+)", stdout)
    assert m, "no device_calls line in output:\n" + stdout
    return int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
@pytest.mark.parametrize("program", sorted(CASES))
def test_pass_reaches_device_copies(offload, tmp_path, program, backend):
    require_backend(backend)
    exe = offload.compile(source_for(program, tmp_path), translate="pass", extra=EXTRA)
    r = offload.run(exe, backend=backend)
    assert r.returncode == 0, "status %d\nstdout:\n%s\nstderr:\n%s" % (r.returncode, r.stdout, r.stderr)
    got, want = device_calls(r.stdout)
    assert got == want, "device copies ran %d times, expected %d:\n%s" % (got, want, r.stdout)


@pytest.mark.parametrize("program", sorted(CASES))
def test_pass_keeps_results_on_stock_runtime(offload, tmp_path, program):
    """On stock libomptarget (one address space, no published table) every
    translation misses and returns its input: results stay correct."""
    if not os.path.exists(os.path.join(paths.LLVM_LIB, "libomptarget.so.22.1")):
        pytest.skip("stock libomptarget 22 not installed")
    for f in (paths.DEVICE_RUNTIME, paths.PASS_PLUGIN):
        if not os.path.exists(f):
            pytest.skip("not built: %s" % f)
    exe = offload.compile(source_for(program, tmp_path), translate="pass", extra=EXTRA)
    r = offload.run(exe, backend="host-upstream")
    assert r.returncode == 0, "status %d\nstdout:\n%s\nstderr:\n%s" % (r.returncode, r.stdout, r.stderr)
    device_calls(r.stdout)


@pytest.mark.parametrize("program", sorted(CASES))
def test_native_on_sim_diagnoses_untranslated_pointer(offload, tmp_path, program):
    require_backend("sim")
    expected_calls, diagnostic = CASES[program]
    exe = offload.compile(source_for(program, tmp_path), translate="native", extra=EXTRA)
    r = offload.run(exe, backend="sim")
    if diagnostic is None:
        # Captured as a scalar: translated by the mapping table.
        assert r.returncode == 0, r.stderr
        got, want = device_calls(r.stdout)
        assert got == want
        return
    assert r.returncode != 0, "native build ran untranslated pointers without error:\n" + r.stdout
    lines = [l for l in r.stderr.splitlines() if l.startswith("ompsim:")]
    assert len(lines) == 1, r.stderr
    assert re.search(diagnostic, lines[0]), lines[0]
