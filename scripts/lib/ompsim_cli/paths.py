"""Where ompsim's sources, build outputs and the LLVM 22 tools live."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))
BUILD = os.environ.get("OMPSIM_BUILD_DIR", os.path.join(ROOT, "build"))
LIB = os.path.join(BUILD, "lib")
BIN = os.path.join(BUILD, "bin")
LLVM_BIN = "/usr/lib/llvm-22/bin"
LLVM_LIB = "/usr/lib/llvm-22/lib"

#: Our libomptarget replacement (soname libomptarget.so.22.1).
RUNTIME = os.path.join(LIB, "runtime", "libomptarget.so.22.1")
#: The device runtime (translate API), linked into device images by `ompsim cc`.
DEVICE_RUNTIME = os.path.join(LIB, "libompsim-device.so")
#: The LLVM pass plugin that rewrites indirect calls in device code.
PASS_PLUGIN = os.path.join(LIB, "OmpsimIndirect.so")
#: The executor of the simulated device.
EXECUTOR = os.path.join(BIN, "ompsim-device")


def tool(name):
    """Path of an LLVM 22 tool (clang-22, FileCheck, opt, ...)."""
    return os.path.join(LLVM_BIN, name)


def ensure_built(quiet=True):
    """Runs scripts/setup (installs packages if missing, configures, builds). Exits on failure."""
    cmd = [os.path.join(ROOT, "scripts", "setup")]
    out = subprocess.run(cmd, stdout=subprocess.PIPE if quiet else None, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        if quiet:
            sys.stderr.write(out.stdout)
        sys.stderr.write("ompsim: build failed (scripts/setup exited %d)\n" % out.returncode)
        sys.exit(out.returncode or 1)
