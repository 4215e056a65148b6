"""The external programs ompsim runs, the Debian packages that provide them, and
the environment every compile runs in.

Every tool the CLI, the harness and the tests run is named here once, with the
package `scripts/setup` installs for it (`scripts/packages.txt`), so a missing
tool is reported as "install <package>" and a test can prove that the package
list covers every tool (`scripts/tests/test_packages.py`).
"""
import os
import shutil

LLVM_BIN = "/usr/lib/llvm-22/bin"
LLVM_LIB = "/usr/lib/llvm-22/lib"
_SCRIPTS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
#: The packages `scripts/setup` installs, one or more a line (comments with '#'): those
#: ompsim's commands need (`scripts/setup --tools` installs these alone), and those only the
#: unit tests, benchmarks and checks need.
PACKAGE_LIST = os.path.join(_SCRIPTS, "packages.txt")
DEV_PACKAGE_LIST = os.path.join(_SCRIPTS, "packages-dev.txt")


class Tool:
    """One external program: where it lives, which package provides it, why ompsim needs it."""

    def __init__(self, name, package, purpose, llvm=True, required=True, path=None):
        self.name = name
        self.fixed_path = path
        self.package = package
        self.purpose = purpose
        self.llvm = llvm
        self.required = required

    def path(self):
        """The tool's file: LLVM 22's own bin folder for LLVM tools, else the first on PATH (or None)."""
        if self.fixed_path:
            return self.fixed_path
        if self.llvm:
            return os.path.join(LLVM_BIN, self.name)
        return shutil.which(self.name)

    def missing_line(self):
        """The one line setup and the CLI print when the tool is missing."""
        return "ompsim: missing tool %s (%s): install the Debian package %s" % (
            self.name, self.purpose, self.package)


#: Every external program ompsim's scripts, harness, CMake build and tests run, and
#: the programs clang-22's offload driver runs for them.
TOOLS = {t.name: t for t in [
    Tool("clang", "clang-22", "C offload compiler"),
    Tool("clang++", "clang-22", "C++ offload compiler"),
    Tool("flang", "flang-22", "Fortran offload compiler"),
    Tool("clang-linker-wrapper", "clang-tools-22", "the offload link clang-22 runs"),
    Tool("ld.lld", "lld-22", "device link of bitcode (--image=ir) images"),
    Tool("lld", "lld-22", "device link of bitcode (--image=ir) images"),
    Tool("opt", "llvm-22", "pass plugin tests"),
    Tool("llvm-link", "llvm-22", "bitcode device images, the GPU device runtime's bitcode"),
    Tool("llvm-ar", "llvm-22", "the GPU device runtime's archives (libompdevice.a)"),
    Tool("llvm-offload-binary", "llvm-22", "offload binaries inside host programs"),
    Tool("clang-offload-packager", "clang-tools-22", "offload binaries inside host programs"),
    Tool("llvm-nm", "llvm-22", "symbol listings in tests"),
    Tool("llvm-symbolizer", "llvm-22", "the frames of OFFLOAD_TRACK_* stack traces"),
    Tool("llvm-readelf", "llvm-22", "ELF headers in tests"),
    Tool("llvm-objcopy", "llvm-22", "corrupted-image tests"),
    Tool("llvm-objdump", "llvm-22", "instruction boundaries in corrupted-image tests"),
    Tool("llvm-strip", "llvm-22", "stripped-image tests"),
    Tool("llvm-dis", "llvm-22", "bitcode listings in tests"),
    Tool("llc", "llvm-22", "device code generation of the gpu-build columns"),
    Tool("FileCheck", "llvm-22-tools", "output checks of the conformance matrix"),
    Tool("lit", "llvm-22-tools", "pass plugin tests"),
    Tool("clang-format", "clang-format-22", "the format check (scripts/check-format)"),
    Tool("clang-tidy", "clang-tidy-22", "the naming check (scripts/check-naming)"),
    Tool("run-clang-tidy", "clang-tidy-22", "the naming check (scripts/check-naming)"),
    Tool("not", "llvm-22-tools", "pass plugin tests"),
    # Debian's python3, never another one first on PATH (it lacks pytest).
    Tool("python3", "python3", "the ompsim CLI and pytest", llvm=False, path="/usr/bin/python3"),
    Tool("cmake", "cmake", "the build", llvm=False),
    Tool("ninja", "ninja-build", "the build", llvm=False),
    Tool("make", "make", "the Makefile test of `ompsim cc`", llvm=False),
    Tool("ld", "binutils", "the host link clang-22 runs", llvm=False),
    Tool("git", "git", "version stamp of matrix results", llvm=False),
    Tool("ptxas", "(the CUDA toolkit; optional)", "assembling PTX of gpu-build columns", llvm=False,
         required=False),
]}


def tool(name):
    """Path of a tool in TOOLS (LLVM 22's own copy for LLVM tools, never a bare `clang`)."""
    t = TOOLS.get(name)
    if t is None:
        raise KeyError("ompsim: tool %r is not declared in ompsim_base/toolchain.py" % name)
    return t.path() or name


def environment(base=None):
    """The environment every compile runs in: LLVM 22's bin first on PATH.

    clang-22's offload link runs clang-linker-wrapper, which runs a compiler and
    linkers of its own; with LLVM 22's bin first no other LLVM on PATH (such as
    Debian's unversioned clang, which is clang-14 on bookworm) takes part.
    """
    env = dict(os.environ if base is None else base)
    rest = [p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p and p != LLVM_BIN]
    env["PATH"] = os.pathsep.join([LLVM_BIN] + rest)
    return env


def packages(dev=True):
    """The Debian packages scripts/setup installs; without `dev`, those of `scripts/setup
    --tools` (the commands' alone)."""
    out = []
    for name in (PACKAGE_LIST, DEV_PACKAGE_LIST) if dev else (PACKAGE_LIST,):
        with open(name) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    out.extend(line.split())
    return out


def missing_tools(names):
    """The Tool of every name in `names` whose file is not there."""
    out = []
    for n in names:
        t = TOOLS[n]
        p = t.path()
        if not p or not os.access(p, os.X_OK):
            out.append(t)
    return out
