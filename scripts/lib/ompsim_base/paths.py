"""Where ompsim's sources, build outputs and the LLVM 22 tools live.

Two layouts share this module:

* a source checkout: ROOT is the checkout, BUILD its build folder
  (`OMPSIM_BUILD_DIR`, default `build`), and a missing output is built by
  `scripts/setup`;
* an installed tree (`cmake --install build --prefix DIR`): ROOT is
  `DIR/share/ompsim` (the CLI, the conformance programs and harness), BUILD is
  `DIR/lib/ompsim` (laid out like a build folder: `lib/`, `bin/`). The file
  `ROOT/ompsim-install.txt` marks it and names BUILD relative to ROOT, so the
  whole tree can be moved.
"""
import os
import subprocess
import sys

from . import toolchain

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))
#: Written by `cmake --install`: the build-like folder, relative to ROOT.
INSTALL_MARKER = os.path.join(ROOT, "ompsim-install.txt")
INSTALLED = os.path.exists(INSTALL_MARKER)
if INSTALLED:
    with open(INSTALL_MARKER) as _f:
        BUILD = os.path.normpath(os.path.join(ROOT, _f.read().strip()))
else:
    BUILD = os.environ.get("OMPSIM_BUILD_DIR", os.path.join(ROOT, "build"))
LIB = os.path.join(BUILD, "lib")
BIN = os.path.join(BUILD, "bin")
LLVM_BIN = toolchain.LLVM_BIN
LLVM_LIB = toolchain.LLVM_LIB

#: Our libomptarget replacement (soname libomptarget.so.22.1).
RUNTIME = os.path.join(LIB, "runtime", "libomptarget.so.22.1")
#: The device runtime (translate API), linked into device images by `ompsim cc`.
DEVICE_RUNTIME = os.path.join(LIB, "libompsim-device.so")
#: The device's answers to the OpenMP API, linked into every host-offload image.
DEVICE_API = os.path.join(LIB, "libompsim-device-api.a")
#: ompsim's <ompx.h>: the kernel-language API answered by the device runtime,
#: first on the include path of host-offload device compiles (`ompsim cc`).
OMPX_INCLUDE = os.path.join(ROOT, "runtime", "device", "ompx", "include")
#: The CUDA device math functions libm lacks (normcdf, erfinv, ...), force-included
#: into host-offload device compiles (`ompsim cc`); libompsim-device defines them.
DEVICE_MATH_HEADER = os.path.join(ROOT, "runtime", "device", "math", "include", "__ompsim_device_math.h")
#: The LLVM pass plugin that rewrites indirect calls in device code.
PASS_PLUGIN = os.path.join(LIB, "OmpsimIndirect.so")
#: The compile server (docs/compile-server.md): preloaded into LLVM's tools, and the client
#: that asks a server for one run.
COMPILE_SERVER_LIBRARY = os.path.join(LIB, "libompsim-compile-server.so")
COMPILE_CLIENT = os.path.join(BIN, "ompsim-cc-client")
#: The executor of the simulated device.
EXECUTOR = os.path.join(BIN, "ompsim-device")
#: ompsim's GPU device runtime for the virtual GPU (x86-64 bitcode), which the
#: executor links into every GPU image it runs.
VGPU_RUNTIME = os.path.join(LIB, "ompsim-vgpu", "ompdevice.bc")


def tool(name):
    """Path of an LLVM 22 tool (clang, FileCheck, opt, ...) declared in toolchain.TOOLS."""
    return toolchain.tool(name)


def output_dir(name):
    """Default folder for a command's outputs: under the checkout, or ./NAME when installed."""
    if INSTALLED:
        return os.path.abspath(name)
    return None


def ensure_built(quiet=False, out=None, everything=False, selfcheck=True):
    """Runs scripts/setup --tools (installs the packages the commands need if missing,
    configures, builds what they need: no unit tests), or with `everything` (`ompsim bench`:
    Google Benchmark, matplotlib) scripts/setup itself; without `selfcheck` (`ompsim
    matrix`, whose cells check more), no selfcheck after a build. Exits on failure.

    Set-up shows each step as it starts and the build's progress as it goes, on `out`
    (default: stderr, which keeps stdout for the command's own output); `quiet` keeps it
    back and shows it only if set-up fails. An installed tree is never built: a missing
    file there is reported instead.
    """
    if INSTALLED:
        missing = [p for p in (RUNTIME, DEVICE_RUNTIME, PASS_PLUGIN, EXECUTOR) if not os.path.exists(p)]
        if missing:
            sys.stderr.write("ompsim: the installation in %s is incomplete: %s is missing\n"
                             % (os.path.dirname(os.path.dirname(ROOT)), missing[0]))
            sys.exit(1)
        return
    if os.environ.get("OMPSIM_SETUP_ACTIVE") == "1":
        # scripts/setup is further up this process tree (its selfcheck compiles
        # through `ompsim cc`): running it again would start the same selfcheck,
        # and so on without end.
        sys.stderr.write("ompsim: scripts/setup has just built %s and it still lacks what this command needs; "
                         "not building again from inside scripts/setup (check OMPSIM_BUILD_DIR)\n" % BUILD)
        sys.exit(1)
    cmd = ([os.path.join(ROOT, "scripts", "setup")] + ([] if everything else ["--tools"])
           + ([] if selfcheck else ["--no-selfcheck"]))
    stream = out or sys.stderr
    stream.flush()
    try:
        target = subprocess.PIPE if quiet else stream.fileno()
    except (AttributeError, OSError, ValueError):
        target = None        # a stream without a file (a test's capture): this process's stdout
    r = subprocess.run(cmd, stdout=target, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        if quiet:
            sys.stderr.write(r.stdout)
        sys.stderr.write("ompsim: build failed (scripts/setup exited %d)\n" % r.returncode)
        sys.exit(r.returncode or 1)


def ensure_target(target, output):
    """Builds the CMake target `target` (whose file is `output`) if the file is missing: a
    tool no matrix needs (ompsim-inspect) is left out of the first set-up's build and made
    the first time its command runs. Returns whether `output` exists."""
    if os.path.exists(output):
        return True
    ensure_built()
    if os.path.exists(output) or INSTALLED:
        return os.path.exists(output)
    sys.stderr.write("ompsim: building %s (its first use)\n" % target)
    sys.stderr.flush()
    r = subprocess.run(["cmake", "--build", BUILD, "--target", target], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=toolchain.environment())
    if r.returncode != 0:
        sys.stderr.write(r.stdout)
        sys.stderr.write("ompsim: building %s failed (cmake --build exited %d)\n" % (target, r.returncode))
    return os.path.exists(output)
