"""`ompsim cc [--translate=pass|native] [--image=elf|ir] [--gpu=ARCH] <clang arguments>`.

A drop-in wrapper around clang-22 / clang++-22 / flang-22 for OpenMP offload
builds. It adds `-fopenmp -fopenmp-targets=x86_64-pc-linux-gnu` unless the
command line already chooses them, and:

* `--translate=pass` (default) loads ompsim's pass plugin into the device
  compilation only, so device code translates host function pointers before
  every indirect call; `native` leaves call sites as clang emits them. The
  pass plugin also makes an `ompx_bare` region of a host-offload build run
  on every thread of every block, in three dimensions, as on a GPU
  (clang-22 runs it once per team; docs/ompx.md).
* `--image=ir` embeds LLVM bitcode (`-fopenmp-target-jit`, device link by lld)
  instead of an ELF shared object. `-fopenmp-target-jit` among the clang
  arguments (the last of it and `-fno-openmp-target-jit` decides, as in clang)
  asks for the same and gets the same lld device link: clang-22 would hand
  the bitcode link to the system linker, which has no `--lto-emit-llvm`.
* `--gpu=sm_XX|gfxXXX` offloads to that GPU instead (`--offload-arch=`); the
  pass then calls upstream's `__llvm_omp_indirect_call_lookup`. clang's own
  spelling, `--offload-arch=sm_XX|gfxXXX`, means the same. A comma list
  (`--gpu=sm_90,gfx90a`) builds one binary with an image for each; the
  simulated device runs the first it takes, or the one OMPSIM_SIM_GPU names
  (`ompsim run --backend sim-amdgcn` sets it). Fortran takes one architecture.
  A link embeds the GPU's LLVM IR (`-fopenmp-target-jit -nogpulib`), and so
  does an object compiled apart (`-c`): the simulated device runs it, serving
  the device runtime itself (Debian's LLVM ships none for GPUs; for a real
  GPU, link with ompsim's, docs/gpu-device-runtime.md). Device code alone
  (`--offload-device-only -S`) stays the GPU's assembly. The device compile
  keeps every malloc, free, calloc and realloc (`-fno-builtin-malloc`, ...),
  which -O2 would remove with the overrun of a block that does not escape,
  for the checked device heap to see (docs/gpu-checks.md). flang-22 has no
  `-fopenmp-target-jit`: for Fortran, ompsim cc runs flang-22's own jobs with
  the changes that flag makes (device bitcode, no ptxas, the IR embedded;
  fortran_gpu.py), so Fortran runs on the simulated GPU too.
* A link uses ld.lld-22 for the host program and the host-offload image
  unless `-fuse-ld=` or `--ld-path=` chooses another linker (GNU ld spends
  about a second reading the symbols of the libraries libomptarget.so needs).
* When linking for the host-offload target, the device link gets ompsim's
  device runtime (libompsim-device.so, with an rpath), so device code may also
  call `__kmpc_target_translate_fptr` / `__llvm_omp_indirect_call_lookup`, and
  flang's kernels find the GPU device-runtime ABI they call; and the image
  gets the device's OpenMP API answers (libompsim-device-api.a:
  `omp_is_initial_device()` is false, `omp_get_device_num()` the device).
* The device compile of a host-offload build finds ompsim's <ompx.h> first,
  so the ompx kernel-language API (`ompx_block_id_x()`, shuffles, ...)
  answers as a GPU does there (docs/ompx.md); the host compile keeps clang's.
* The device compile of a host-offload build also gets CUDA's device math
  functions that libm lacks, as a GPU's gets them from clang's wrappers:
  normcdf, normcdfinv, erfinv, erfcinv and their float forms (normcdff, ...),
  force-included, computed by libompsim-device (docs/device-math.md). In C a
  program's own definition of one of them is the one its device code calls;
  in C++ (static constexpr, as on a GPU) it conflicts, unless
  -D__CLANG_GPU_DISABLE_MATH_WRAPPERS leaves them out.

Every other argument reaches the compiler unchanged, in order; the compiler's
output and exit status are ompsim cc's. Add `-###` to see the full command.

example: ompsim cc --translate=pass -O2 prog.c -o prog
"""
import os
import subprocess
import sys

from ompsim_base import gpu, paths, toolchain
from ompsim_base.offload_command import UsageError, command, keeps_gpu_ir, missing_entry_point_lines, needs_build

from . import fortran_gpu


def register(sub):
    """Adds `cc` to `ompsim --help` (main.py hands `ompsim cc ...` to main_argv directly)."""
    p = sub.add_parser("cc", help="clang-22 wrapper for offload builds (drop-in CC/CXX)",
                       description=__doc__, formatter_class=_raw_formatter())
    p.add_argument("--translate", choices=["pass", "native"], default="pass")
    p.add_argument("--image", choices=["elf", "ir"], default="elf")
    p.add_argument("--gpu", metavar="ARCH", help="sm_XX (NVIDIA) or gfxXXX (AMD), or a comma list of them")
    p.add_argument("args", nargs="*", help="clang arguments, passed through unchanged")
    p.set_defaults(func=lambda args: main_argv(_unparse(args)))


def _raw_formatter():
    import argparse
    return argparse.RawDescriptionHelpFormatter


def _unparse(args):
    out = ["--translate=" + args.translate, "--image=" + args.image]
    if args.gpu:
        out.append("--gpu=" + args.gpu)
    return out + list(args.args)


def main_argv(argv):
    """Runs the compiler for `ompsim cc argv`; never returns on success of exec."""
    if argv in (["--help"], ["-h"]):
        sys.stdout.write(__doc__)
        return 0
    try:
        cmd, settings, links = command(argv)
    except UsageError as e:
        sys.stderr.write("ompsim: cc: %s\n" % e)
        return 2
    if needs_build(settings, links):
        paths.ensure_built()
        still = needs_build(settings, links)
        if still:
            sys.stderr.write("ompsim: cc: build finished but %s is still missing\n" % still[0])
            return 1
    sys.stdout.flush()
    sys.stderr.flush()
    if links and not settings.gpu:
        return run_offload_link(cmd, argv)
    if settings.gpu and os.path.basename(cmd[0]).startswith("flang"):
        if links or keeps_gpu_ir(cmd):
            return fortran_gpu.run(cmd, settings.gpu)
        if gpu.ptx_feature_flags(settings.gpus, cmd, real_ptx=True):
            # Device code alone, without CUDA: flang-22's jobs with the PTX version given.
            return fortran_gpu.run(cmd, settings.gpu, keep_ir=False)
    try:
        # Output and exit status are the compiler's own; LLVM 22's bin comes first
        # on PATH for the tools the offload link runs (toolchain.environment).
        os.execve(cmd[0], cmd, toolchain.environment())
    except OSError as e:
        sys.stderr.write("ompsim: cc: cannot run %s: %s\n" % (cmd[0], e.strerror))
        return 127


def run_offload_link(cmd, argv):
    """Runs a host-offload build; the compiler's output and status are passed on.

    A device link that fails on a `__kmpc_` entry point no library provides
    (one the GPU device-runtime ABI has and libompsim-device lacks) ends with
    one line naming the symbol and the program, after the linker's own.
    """
    try:
        proc = subprocess.run(cmd, env=toolchain.environment(), stderr=subprocess.PIPE)
    except OSError as e:
        sys.stderr.write("ompsim: cc: cannot run %s: %s\n" % (cmd[0], e.strerror))
        return 127
    text = proc.stderr.decode(errors="replace")
    sys.stderr.write(text)
    if proc.returncode != 0:
        sys.stderr.write(missing_entry_point_lines(argv, text))
    return proc.returncode
