"""scripts/packages.txt (what scripts/setup installs) covers every program and
library ompsim uses.

This fails even on a machine that happens to have everything installed: each
program and library is resolved to a file and `dpkg -S` names the package that
owns it, which must be on the list, Essential, of Priority required (both are in
every minbase debootstrap) or, for a shared library, a direct dependency of a
listed package.
"""
import functools
import glob
import os
import re
import shutil
import subprocess

import pytest

from ompsim_base import paths, toolchain

pytestmark = pytest.mark.skipif(shutil.which("dpkg") is None, reason="not a Debian system (no dpkg)")


@functools.lru_cache(maxsize=None)
def owner(path):
    """The Debian package owning `path` (or its resolved target), or None."""
    for p in (path, os.path.realpath(path)):
        r = subprocess.run(["dpkg", "-S", p], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if r.returncode == 0:
            # "pkg:arch: /path" or "pkg1, pkg2: /path"; a diversion line starts with "diversion".
            for line in r.stdout.splitlines():
                if not line.startswith("diversion"):
                    return line.split(": ", 1)[0].split(",")[0].split(":")[0].strip()
    return None


@functools.lru_cache(maxsize=None)
def field(package, name):
    r = subprocess.run(["dpkg-query", "-W", "-f=${%s}" % name, package], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip()


def in_every_debian(package):
    return field(package, "Essential") == "yes" or field(package, "Priority") == "required"


@functools.lru_cache(maxsize=None)
def dependencies(package):
    out = set()
    for dep in re.split(r"[,|]", field(package, "Depends") + "," + field(package, "Pre-Depends")):
        name = dep.strip().split(" ")[0].split(":")[0]
        if name:
            out.add(name)
    return out


@functools.lru_cache(maxsize=None)
def listed_and_their_dependencies():
    out = set(toolchain.packages())
    for p in toolchain.packages():
        out |= dependencies(p)
    return out


def assert_provided(path, what, allow_dependency=False):
    pkg = owner(path)
    assert pkg, "%s (%s) belongs to no Debian package" % (path, what)
    ok = pkg in toolchain.packages() or in_every_debian(pkg) or \
        (allow_dependency and pkg in listed_and_their_dependencies())
    assert ok, "%s (%s) comes from the Debian package %s, which scripts/packages.txt does not list" % (
        path, what, pkg)
    return pkg


@pytest.mark.parametrize("name", sorted(n for n, t in toolchain.TOOLS.items() if t.required))
def test_every_declared_tool_comes_from_its_listed_package(name):
    t = toolchain.TOOLS[name]
    path = t.path()
    assert path and os.path.exists(path), t.missing_line()
    assert t.package in toolchain.packages(), "%s: toolchain.py names %s, which is not listed" % (name, t.package)
    pkg = owner(path)
    assert pkg, "%s (%s) belongs to no Debian package" % (path, t.purpose)
    # The named package provides the file itself, or pulls in the one that does
    # (python3 -> python3-minimal): installing it is what the missing-tool line asks.
    assert pkg == t.package or pkg in dependencies(t.package) or in_every_debian(pkg), \
        "%s comes from %s, but toolchain.py names %s in its missing-tool line" % (path, pkg, t.package)


def test_tools_named_in_python_sources_are_declared():
    used = set()
    for f in glob.glob(os.path.join(paths.ROOT, "**", "*.py"), recursive=True):
        if "/build" in f[len(paths.ROOT):]:
            continue
        with open(f, encoding="utf-8") as fh:
            used |= set(re.findall(r"\btool\(\s*\"([^\"]+)\"\s*\)", fh.read()))
    assert used, "found no tool() call: the scan is broken"
    assert sorted(used - set(toolchain.TOOLS)) == []


def test_tools_named_in_cmake_are_declared():
    used = set()
    for f in glob.glob(os.path.join(paths.ROOT, "**", "CMakeLists.txt"), recursive=True):
        with open(f) as fh:
            used |= set(re.findall(r"\$\{(?:OMPSIM_LLVM_TOOLS_DIR|LLVM_TOOLS_BINARY_DIR)\}/([A-Za-z0-9_.+-]+)",
                                   fh.read()))
    assert "clang" in used, "found no LLVM tool in CMake: the scan is broken"
    assert sorted(used - set(toolchain.TOOLS)) == []


@pytest.mark.e2e
@pytest.mark.parametrize("image", ["elf", "ir"])
def test_every_program_the_offload_driver_runs_is_listed(tmp_path, image):
    (tmp_path / "p.c").write_text("int main(void) {\n  int x = 0;\n#pragma omp target map(tofrom: x)\n"
                                  "  x = 1;\n  return !x;\n}\n")
    r = subprocess.run([paths.ROOT + "/scripts/ompsim", "cc", "--image=" + image, "-v", "p.c", "-o", "p"],
                       cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=toolchain.environment(), timeout=600)
    assert r.returncode == 0, r.stdout
    programs = set()
    for line in r.stdout.splitlines():
        m = re.match(r'\s*"(/[^"]+)"', line)
        if m:
            programs.add(m.group(1))
        programs |= set(re.findall(r"--linker-path=(\S+)", line))
        programs |= {p for p in re.findall(r"-fuse-ld=(\S+)", line) if p.startswith("/")}
    names = {os.path.basename(p) for p in programs}
    assert "clang-linker-wrapper" in names, "no offload link in the -v output:\n" + r.stdout[-2000:]
    for p in sorted(programs):
        assert_provided(p, "run by clang-22's offload driver")


def _built_binaries():
    out = glob.glob(os.path.join(paths.LIB, "*.so")) + glob.glob(os.path.join(paths.LIB, "runtime", "*.so.*"))
    out += [os.path.join(paths.BIN, n) for n in ("ompsim-device", "ompsim-inspect")]
    return [p for p in out if os.path.isfile(p)]


def test_every_shared_library_ompsim_links_is_provided():
    bins = _built_binaries()
    if not bins:
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)
    checked = 0
    for b in bins:
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                            subprocess.run([paths.tool("llvm-readelf"), "-d", b], stdout=subprocess.PIPE,
                                           text=True).stdout)
        ldd = subprocess.run(["ldd", b], stdout=subprocess.PIPE, text=True).stdout
        resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", ldd, re.M))
        # The dynamic linker is listed by its path alone.
        resolved.update((os.path.basename(p), p) for p in re.findall(r"^\s*(/\S+) \(0x", ldd, re.M))
        for lib in needed:
            path = resolved.get(lib)
            assert path, "%s needs %s, which ldd cannot resolve" % (b, lib)
            if path.startswith(paths.BUILD):
                continue  # one of ompsim's own libraries
            assert_provided(path, "needed by " + os.path.basename(b), allow_dependency=True)
            checked += 1
    assert checked >= 5


def test_no_built_binary_looks_for_libraries_in_the_working_directory():
    # An empty RUNPATH entry (CMake pads a build RUNPATH with them when install
    # will rewrite it) and a relative one both make the loader search the
    # current directory: running a test from a folder holding a libelf.so.1
    # would load that file.
    bins = _built_binaries() + glob.glob(os.path.join(paths.BIN, "ompsim_*"))
    if not bins:
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)
    for b in bins:
        dyn = subprocess.run([paths.tool("llvm-readelf"), "-d", b], stdout=subprocess.PIPE, text=True).stdout
        runpaths = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", dyn)
        assert runpaths, "%s has no RUNPATH" % b
        for entry in runpaths[0].split(":"):
            assert entry.startswith(("/", "$ORIGIN")), "%s: RUNPATH entry %r is relative to the working " \
                "directory (%s)" % (b, entry, runpaths[0])


def test_the_commands_list_holds_every_tool_but_the_checks_and_no_package_twice():
    # `scripts/setup --tools` installs packages.txt alone: every tool the commands run must
    # come from it. (The libraries: a clean root's `ompsim matrix`, docs/performance.md.)
    commands, dev = toolchain.packages(dev=False), toolchain.packages()[len(toolchain.packages(dev=False)):]
    assert dev and not set(commands) & set(dev) and len(set(commands)) == len(commands)
    checks_only = {n for n, t in toolchain.TOOLS.items() if t.required and t.package not in commands}
    assert checks_only == {"clang-format", "clang-tidy", "run-clang-tidy"}


@pytest.mark.parametrize("module", ["pytest", "xdist", "matplotlib"])
def test_python_modules_of_the_tests_and_benchmarks_are_listed(module):
    r = subprocess.run(["/usr/bin/python3", "-c", "import %s; print(%s.__file__)" % (module, module)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    assert_provided(r.stdout.strip(), "Python module " + module)
