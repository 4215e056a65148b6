"""CUDA's device math functions that glibc's libm lacks (normcdf, normcdfinv, erfinv, erfcinv
and their float forms) in device code built by `ompsim cc`, as a GPU's device compile has them
from clang's CUDA wrappers (docs/device-math.md): known values on every ompsim device, C and
C++, ELF and bitcode images, and a C program's own definition of one of the names kept."""
import math
import struct

import pytest

pytestmark = pytest.mark.e2e

#: (function, argument, value), the values from 40-digit arithmetic (mpmath); the arguments
#: are doubles as written. Doubles are documented within 4 units in the last place.
DOUBLE_CASES = [
    ("normcdf", "0.0", 0.5),
    ("normcdf", "-1.0", 0.15865525393145705141),
    ("normcdf", "-10.0", 7.619853024160526066e-24),
    ("normcdf", "-37.0", 5.7255712225245768227e-300),
    ("normcdfinv", "0.975", 1.9599639845400538556),
    ("normcdfinv", "0.025", -1.9599639845400542118),
    ("normcdfinv", "1e-300", -37.047096299361199237),
    ("erfinv", "0.5", 0.47693627620446987338),
    ("erfinv", "-0.75", -0.81341984759761854169),
    ("erfinv", "0.999999", 3.4589107372754987775),
    ("erfcinv", "0.1", 1.1630871536766740677),
    ("erfcinv", "1e-100", 15.065574702592645704),
    ("erfcinv", "1.9", -1.1630871536766737823),
]
#: The float forms, at arguments a float holds exactly: within one unit in the last place
#: (a double result rounded once).
FLOAT_CASES = [
    ("normcdff", "-2.5f", 0.006209665325776135167),
    ("normcdff", "1.0f", 0.84134474606854294859),
    ("normcdfinvf", "0.75f", 0.6744897501960817432),
    ("normcdfinvf", "0x1p-10f", -3.0972690781987844624),
    ("erfinvf", "0.5f", 0.47693627620446987338),
    ("erfinvf", "-0.875f", -1.0847870400692831413),
    ("erfcinvf", "0.25f", 0.81341984759761854169),
    ("erfcinvf", "1.75f", -0.81341984759761854169),
    ("erfcinvf", "0x1p-60f", 6.2586042899587838879),
]
FUNCTIONS = [("normcdf", "double"), ("normcdff", "float"), ("normcdfinv", "double"), ("normcdfinvf", "float"),
             ("erfinv", "double"), ("erfinvf", "float"), ("erfcinv", "double"), ("erfcinvf", "float")]


def known_values_program():
    """The cases computed in one target region; each printed line is `function result`.

    The functions are declared for the host compile, which never sees ompsim's header (no
    host code calls them: -fopenmp-offload-mandatory compiles no host fallback). C++ declares
    them as a GPU compile lets it: static constexpr, like clang's CUDA wrappers for OpenMP.
    """
    decl = "\n".join("DECL %s %s(%s);" % (ty, name, ty) for name, ty in FUNCTIONS)
    calls = "\n".join("    out[%d] = %s(%s);" % (i, name, arg)
                      for i, (name, arg, _) in enumerate(DOUBLE_CASES + FLOAT_CASES))
    names = ", ".join('"%s"' % name for name, _, _ in DOUBLE_CASES + FLOAT_CASES)
    return r"""
#include <stdio.h>
#ifdef __cplusplus
#define DECL static constexpr __attribute__((always_inline, nothrow))
#else
#define DECL
#endif
#pragma omp declare target
%s
#pragma omp end declare target
enum { N = %d };
int main(void) {
  static const char *names[N] = {%s};
  double out[N];
#pragma omp target map(from : out)
  {
%s
  }
  for (int i = 0; i < N; ++i)
    printf("%%s %%.17g\n", names[i], out[i]);
  return 0;
}
""" % (decl, len(DOUBLE_CASES) + len(FLOAT_CASES), names, calls)


def float_ulp(x):
    """The spacing of floats at |x| (x a normal float)."""
    bits = struct.unpack("<I", struct.pack("<f", abs(x)))[0]
    return 2.0 ** (((bits >> 23) & 0xff) - 127 - 23)


@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize("backend,image", [("sim", "elf"), ("sim-ir", "ir"), ("ours-host", "elf")])
def test_device_math_functions_give_known_values(offload, backend, image, lang):
    exe = offload.compile(known_values_program(), name="math_%s_%s.%s" % (image, lang, lang), translate="pass",
                          image=image, extra=["-fopenmp-offload-mandatory"])
    r = offload.run(exe, backend=backend)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(DOUBLE_CASES) + len(FLOAT_CASES), r.stdout
    for line, (name, arg, want) in zip(lines, DOUBLE_CASES + FLOAT_CASES):
        got_name, got = line.split()
        got = float(got)
        assert got_name == name
        if dict(FUNCTIONS)[name] == "float":
            assert got == struct.unpack("<f", struct.pack("<f", got))[0], line  # a float result
            assert abs(got - want) <= float_ulp(want), "%s(%s) = %r, want %r" % (name, arg, got, want)
        else:
            assert abs(got - want) <= 4 * math.ulp(want), "%s(%s) = %r, want %r" % (name, arg, got, want)


OWN_DEFINITION = r"""
#include <stdio.h>
#pragma omp declare target
/* The program's own normcdf, with CUDA's prototype; erfinv stays ompsim's. */
double normcdf(double x) { return 42.0 + x; }
double erfinv(double);
#pragma omp end declare target
int main(void) {
  double mine = 0, theirs = 0;
#pragma omp target map(from : mine, theirs)
  {
    mine = normcdf(0.5);
    theirs = erfinv(0.5);
  }
  printf("%.6f %.6f\n", mine, theirs);
  return 0;
}
"""


@pytest.mark.parametrize("backend,image", [("sim", "elf"), ("sim-ir", "ir"), ("ours-host", "elf")])
def test_c_programs_own_definition_is_the_one_called(offload, backend, image):
    exe = offload.compile(OWN_DEFINITION, name="own_%s.c" % image, translate="pass", image=image,
                          extra=["-fopenmp-offload-mandatory", "-Wall", "-Werror"])
    r = offload.run(exe, backend=backend)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "42.500000 0.476936\n", r.stdout


OWN_DEFINITION_CXX = r"""
#include <stdio.h>
#pragma omp declare target
double normcdf(double x) { return 42.0 + x; }
#pragma omp end declare target
int main() {
  double mine = 0;
#pragma omp target map(from : mine)
  mine = normcdf(0.5);
  printf("%.6f\n", mine);
  return 0;
}
"""


def test_cxx_definition_needs_the_wrappers_left_out(offload):
    # C++ gets the functions as static constexpr definitions (as from clang's CUDA wrappers
    # on a GPU), which a program's own definition of the same function contradicts; defining
    # __CLANG_GPU_DISABLE_MATH_WRAPPERS leaves them out, as it does clang's.
    with pytest.raises(AssertionError, match="follows constexpr declaration"):
        offload.compile(OWN_DEFINITION_CXX, name="own.cpp", translate="pass")
    exe = offload.compile(OWN_DEFINITION_CXX, name="own_disabled.cpp", translate="pass",
                          extra=["-D__CLANG_GPU_DISABLE_MATH_WRAPPERS"])
    r = offload.run(exe, backend="sim")
    assert (r.returncode, r.stdout) == (0, "42.500000\n"), r.stderr
