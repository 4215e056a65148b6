"""`ompsim selfcheck`: proves the toolchain and every backend of this machine work.

Compiles one tiny offload program per language and device-image kind that
ompsim supports (C and C++ as ELF and bitcode images, Fortran as ELF; flang-22
has no -fopenmp-target-jit; C for an sm_90 GPU, which needs no CUDA) with
`ompsim cc`, and runs each on every backend that runs that image kind here
(sim, sim-ir, ours-host, host-upstream; the GPU image on sim's virtual GPU).
`scripts/setup` runs it after every build whose outputs changed.

A missing tool is one line naming it and the Debian package that provides it;
a failing cell prints the command, its output and a non-zero status.

example: ompsim selfcheck --verbose --force
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

from ompsim_base import backends, paths, toolchain

C_PROGRAM = r"""
#include <stdio.h>
int twice(int x) { return 2 * x; }
#pragma omp declare target to(twice) indirect
int main(void) {
  int (*fp)(int) = twice;
  int r = 0;
#pragma omp target map(from : r)
  r = fp(21);
  printf("selfcheck %d\n", r);
  return r != 42;
}
"""

CXX_PROGRAM = r"""
#include <cstdio>
int twice(int x) { return 2 * x; }
#pragma omp declare target to(twice) indirect
struct Sum {
  int v[4] = {1, 2, 3, 4};
  int total() const { return v[0] + v[1] + v[2] + v[3]; }
};
int main() {
  Sum s;
  int (*fp)(int) = twice;
  int r = 0;
#pragma omp target map(to : s) map(from : r)
  r = fp(s.total()) + 22;
  std::printf("selfcheck %d\n", r);
  return r != 42;
}
"""

FORTRAN_PROGRAM = """
program selfcheck
  implicit none
  integer :: r
  r = 0
  !$omp target map(from: r)
  r = 42
  !$omp end target
  print '(a,i0)', 'selfcheck ', r
  if (r /= 42) stop 1
end program selfcheck
"""

#: (language, source file name, text, image kinds ompsim supports for it)
PROGRAMS = [
    ("C", "selfcheck.c", C_PROGRAM, ("elf", "ir", "sm_90")),
    ("C++", "selfcheck.cpp", CXX_PROGRAM, ("elf", "ir")),
    ("Fortran", "selfcheck.f90", FORTRAN_PROGRAM, ("elf",)),
]

#: image kind -> backends that run it
BACKENDS = {"elf": ["sim", "ours-host", "host-upstream"], "ir": ["sim-ir"], "sm_90": ["sim-nvptx"]}

#: image kind -> the `ompsim cc` option that builds it
IMAGE_OPTIONS = {"elf": "--image=elf", "ir": "--image=ir", "sm_90": "--gpu=sm_90"}

#: tools each language's offload build needs
TOOLS = {
    "C": ["clang", "clang-linker-wrapper", "ld"],
    "C++": ["clang++", "clang-linker-wrapper", "ld"],
    "Fortran": ["flang", "clang-linker-wrapper", "ld"],
}
IR_TOOLS = ["ld.lld"]


def register(sub):
    import argparse
    p = sub.add_parser("selfcheck", help="compile and run a tiny offload program per language on every backend",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verbose", action="store_true", help="print every cell, not only failures")
    p.add_argument("--force", action="store_true", help="run even when the last check of this build passed")
    p.set_defaults(func=main)


def _stamp():
    """Changes whenever the build outputs or the installed toolchain change."""
    h = hashlib.sha256()
    for p in (paths.RUNTIME, paths.DEVICE_RUNTIME, paths.PASS_PLUGIN, paths.EXECUTOR, paths.VGPU_RUNTIME,
              os.path.join(paths.LIB, "libompsim-plugin-sim.so"), os.path.join(paths.LIB, "libompsim-plugin-host.so"),
              toolchain.tool("clang"), toolchain.tool("flang"), toolchain.tool("clang-linker-wrapper"),
              os.path.join(toolchain.LLVM_LIB, "libomptarget.so.22.1")):
        try:
            st = os.stat(p)
            h.update(("%s %d %d\n" % (p, st.st_size, st.st_mtime_ns)).encode())
        except OSError:
            h.update(("%s missing\n" % p).encode())
    h.update(open(__file__, "rb").read())
    return h.hexdigest()


def _stamp_file():
    return os.path.join(paths.BUILD, "selfcheck.json")


def cells():
    """Every (language, file name, text, image, backend) the check runs."""
    for lang, name, text, images in PROGRAMS:
        for image in images:
            for backend in BACKENDS[image]:
                yield lang, name, text, image, backend


def main(args):
    stamp = _stamp()
    try:
        with open(_stamp_file()) as f:
            if not args.force and json.load(f).get("stamp") == stamp:
                if args.verbose:
                    print("ompsim selfcheck: passed before for this build and toolchain")
                return 0
    except (OSError, ValueError):
        pass

    needed = sorted({t for lang, *_ in PROGRAMS for t in TOOLS[lang]} | set(IR_TOOLS))
    missing = toolchain.missing_tools(needed)
    for t in missing:
        sys.stderr.write(t.missing_line() + "\n")
    if missing:
        return 1

    failures, passed = [], 0
    env = toolchain.environment()
    with tempfile.TemporaryDirectory(prefix="ompsim-selfcheck-") as tmp:
        built = {}
        for lang, name, text, image, backend in cells():
            key = (name, image)
            if key not in built:
                src = os.path.join(tmp, name)
                with open(src, "w") as f:
                    f.write(text)
                exe = os.path.join(tmp, "%s-%s" % (name.replace(".", "-"), image))
                cmd = [os.path.join(paths.ROOT, "scripts", "ompsim"), "cc",
                       IMAGE_OPTIONS[image], src, "-o", exe]
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp,
                                   env=env, timeout=600)
                built[key] = (exe, r)
            exe, r = built[key]
            cell = "%s %s image on %s" % (lang, image, backend)
            if r.returncode != 0:
                failures.append("%s: compile failed (%s)\n%s" % (cell, " ".join(r.args), r.stdout))
                continue
            why = backends.unavailable_reason(backend)
            if why:
                failures.append("%s: backend unavailable: %s" % (cell, why))
                continue
            # A JIT cache of its own: a bitcode image's code is generated (and
            # kept) here every time, never read back from the user's cache.
            run = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp,
                                 env=dict(backends.environment(backend),
                                          OMPSIM_JIT_CACHE=os.path.join(tmp, "jit-cache")), timeout=300)
            if run.returncode != 0 or "selfcheck 42" not in run.stdout:
                failures.append("%s: exit %d\n%s" % (cell, run.returncode, run.stdout))
                continue
            passed += 1
            if args.verbose:
                print("ompsim selfcheck: %s: ok" % cell)
    for f in failures:
        sys.stderr.write("ompsim selfcheck: %s\n" % f.rstrip())
    print("ompsim selfcheck: %d passed, %d failed" % (passed, len(failures)))
    if failures:
        return 1
    try:
        with open(_stamp_file(), "w") as f:
            json.dump({"stamp": stamp, "cells": passed}, f)
    except OSError:
        pass
    return 0

