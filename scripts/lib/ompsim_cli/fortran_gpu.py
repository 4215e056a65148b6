"""Fortran for a GPU, with the device code kept as the GPU's LLVM IR (`ompsim cc --gpu` on flang-22).

clang-22 keeps a GPU's device code as LLVM IR for the JIT with `-fopenmp-target-jit`:
its device compile emits bitcode, and its offload link (clang-linker-wrapper) links
that bitcode into one module and embeds it (`--embed-bitcode`). flang-22 has no such
flag: for nvptx64 its device compile emits PTX, which it assembles with CUDA's ptxas
(absent on most machines, and the simulated GPU runs IR, not SASS), and its offload
link compiles the device code for the GPU.

`ompsim cc` therefore asks flang-22 for its jobs (`-###`) and runs them with the few
changes clang-22's JIT build has: the device compile emits bitcode instead of
assembly, the ptxas step goes, the offload packager takes the bitcode, and the offload
link embeds the linked IR. The jobs keep every other argument flang-22 gave them. The
intermediate files the driver would have removed are removed when the jobs end.
"""
import os
import shlex
import subprocess
import sys

from ompsim_base import gpu, toolchain


class DriverError(Exception):
    """flang-22's driver did not say what it would run."""


def driver_jobs(cmd, env):
    """The jobs flang-22 would run for `cmd`, each an argv (from `-###`)."""
    proc = subprocess.run(cmd + ["-###"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error:" in line]
        raise DriverError("; ".join(errors) or proc.stderr.strip() or "exit %d" % proc.returncode)
    jobs = [shlex.split(line) for line in proc.stderr.splitlines() if line.startswith(' "')]
    if not jobs:
        raise DriverError("flang-22 -### printed no job")
    return jobs


def _output_of(job):
    for flag in ("-o", "--output-file"):
        if flag in job and job.index(flag) + 1 < len(job):
            return job[job.index(flag) + 1]
    return None


def _consumed(path, later):
    """True when a later job reads `path` (as an argument, or after `=` in one)."""
    return any(arg == path or arg.endswith("=" + path) or ("=" + path + ",") in arg
               for job in later for arg in job)


def _give_ptx_version(job, arch):
    """flang-22 has no --cuda-feature: the device compile's PTX version (CUDA's, or 4.2
    without CUDA, which no OpenMP GPU accepts) becomes the one clang-22 builds are given."""
    for i in range(len(job) - 1):
        if job[i] == "-target-feature" and job[i + 1].startswith("+ptx"):
            job[i + 1] = "+ptx%d" % gpu.ptx_version(arch)


def rewrite(jobs, arch, keep_ir=True):
    """(jobs for an IR device image, the intermediate files they write).

    `arch` is the GPU's. An intermediate file is one a later job reads (what the
    user asked for is read by none). With `keep_ir` false (device code alone, built
    without CUDA) the jobs stay flang-22's, but for the PTX version.
    """
    triple = gpu.triple(arch)
    if not keep_ir:
        jobs = [list(job) for job in jobs]
        for job in jobs:
            if os.path.basename(job[0]).startswith("flang") and triple in job:
                _give_ptx_version(job, arch)
        return jobs, []
    out, bitcode_of = [], {}
    for job in jobs:
        tool = os.path.basename(job[0])
        job = list(job)
        if tool.startswith("flang") and triple in job and "-S" in job:
            # The device compile: bitcode instead of the GPU's assembly.
            asm = _output_of(job)
            bc = os.path.splitext(asm)[0] + ".bc"
            job[job.index("-S")] = "-emit-llvm-bc"
            job[job.index("-o") + 1] = bc
            bitcode_of[asm] = bc
            _give_ptx_version(job, arch)
        elif tool == "ptxas":
            # The assembler's input is the device compile's output, now bitcode.
            bitcode_of[_output_of(job)] = next((bitcode_of[a] for a in job if a in bitcode_of), None)
            continue
        elif tool in ("llvm-offload-binary", "clang-offload-packager"):
            for i, arg in enumerate(job):
                if arg.startswith("--image="):
                    fields = arg[len("--image="):].split(",")
                    fields = ["file=" + bitcode_of[f[5:]] if f.startswith("file=") and bitcode_of.get(f[5:])
                              else f for f in fields]
                    job[i] = "--image=" + ",".join(fields)
        elif tool == "clang-linker-wrapper":
            # What clang-22's driver gives the offload link for -fopenmp-target-jit.
            job[1:1] = ["--embed-bitcode", "--device-compiler=%s=-flto=full" % triple]
            # Its device LTO runs clang-22, which reads the PTX version from CUDA again.
            link_feature = gpu.device_link_feature(arch, [])
            if link_feature:
                job[1:1] = ["--device-compiler=%s=%s" % (triple, link_feature)]
        out.append(job)
    temps = []
    for i, job in enumerate(out):
        output = _output_of(job)
        if output and output != "-" and _consumed(output, out[i + 1:]):
            temps.append(output)
    return out, temps


def run(cmd, arch, keep_ir=True):
    """Runs flang-22 command `cmd` for GPU `arch` (with an IR device image unless `keep_ir`
    is false, see rewrite); its exit status."""
    env = toolchain.environment()
    try:
        jobs = driver_jobs(cmd, env)
    except (DriverError, OSError) as e:
        sys.stderr.write("ompsim: cc: %s: cannot list flang-22's jobs: %s\n" % (cmd[0], e))
        return 1
    jobs, temps = rewrite(jobs, arch, keep_ir)
    try:
        for job in jobs:
            sys.stdout.flush()
            sys.stderr.flush()
            try:
                status = subprocess.run(job, env=env).returncode
            except OSError as e:
                sys.stderr.write("ompsim: cc: cannot run %s: %s\n" % (job[0], e.strerror))
                return 127
            if status != 0:
                return status
        return 0
    finally:
        for path in temps:
            try:
                os.unlink(path)
            except OSError:
                pass
