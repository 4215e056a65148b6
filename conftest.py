"""Shared pytest fixtures: compile real offload programs with clang-22 and run them on a backend."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "lib"))

from ompsim_base import backends, leftovers, paths, toolchain  # noqa: E402

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")


class Offload:
    """Compiles offload programs into a test's tmp dir and runs them on backends."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path

    def compile(self, source, name=None, translate="native", image="elf", extra=(), cwd=None):
        """Builds `source` (a path, or program text ending in a C/C++ extension name via `name`).

        translate="native" uses plain clang-22; "pass" goes through `ompsim cc`.
        Returns the executable path; raises AssertionError with the compiler's output on failure.
        """
        if "\n" in source:
            src = self.tmp / (name or "prog.c")
            src.write_text(source)
        else:
            src = source
        exe = self.tmp / (os.path.splitext(os.path.basename(str(src)))[0] + ".exe")
        cxx = str(src).endswith((".cpp", ".cc", ".cxx"))
        if translate == "native" and image == "elf":
            cmd = [paths.tool("clang++" if cxx else "clang"), "-fopenmp",
                   "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1", "-g"]
        else:
            cmd = [OMPSIM, "cc", "--translate=" + translate, "--image=" + image, "-O1", "-g"]
        cmd += [str(src), "-o", str(exe), *extra]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           cwd=cwd or self.tmp, timeout=300, env=toolchain.environment())
        assert r.returncode == 0, "compile failed: %s\n%s" % (" ".join(cmd), r.stdout)
        return exe

    def run(self, exe, backend="ours-host", args=(), env=None, timeout=120):
        """Runs `exe` on `backend`; returns CompletedProcess (text, stdout/stderr separate)."""
        why = backends.unavailable_reason(backend)
        if why:
            pytest.skip("backend %s unavailable: %s" % (backend, why))
        e = backends.environment(backend)
        e.update(env or {})
        return subprocess.run([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=e, timeout=timeout, cwd=self.tmp)


@pytest.fixture
def offload(tmp_path):
    return Offload(tmp_path)


#: Marks the JIT cache folder a pytest run made for itself (and its xdist workers share).
TEST_CACHE_PREFIX = "ompsim-test-jit-cache-"


#: Off while a test that checks what a killed host leaves runs (keep_registrations).
_FORGET_KILLED = [True]


@pytest.fixture
def keep_registrations():
    """Leaves the registration files of killed children for the test to check."""
    _FORGET_KILLED[0] = False
    yield
    _FORGET_KILLED[0] = True


def _forget_registration_of_killed_children():
    """A child killed by a signal leaves libomp's registration file in /dev/shm, as every
    libomp program does (stock's abort() too): the test process removes it as it reaps the
    child, so that scripts/test's leftover check names only what ompsim leaves
    (docs/reliability.md). Executors are never the test process's children."""
    handle = subprocess.Popen._handle_exitstatus
    if getattr(handle, "_ompsim_forgets", False):
        return

    def handle_exitstatus(self, *args, **kwargs):
        handle(self, *args, **kwargs)
        if self.returncode is not None and self.returncode < 0 and _FORGET_KILLED[0]:
            leftovers.forget_registration(self.pid)

    handle_exitstatus._ompsim_forgets = True
    subprocess.Popen._handle_exitstatus = handle_exitstatus


def pytest_configure(config):
    _forget_registration_of_killed_children()
    _use_a_fresh_jit_cache(config)


def _use_a_fresh_jit_cache(config):
    """Points the JIT cache (on by default, in ~/.cache) at a fresh folder of this run.

    Every bitcode image a test runs would otherwise be compiled into, or read
    from, the cache of the user running the tests: tests must not write to
    their home, and a cache filled by an earlier run would hide the compile
    path from the tests that check it. xdist workers inherit the controller's
    folder (so they also exercise concurrent fills); the controller removes it.
    """
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.basename(xdg).startswith(TEST_CACHE_PREFIX) and "OMPSIM_JIT_CACHE" not in os.environ:
        return
    import tempfile
    folder = tempfile.mkdtemp(prefix=TEST_CACHE_PREFIX)
    config._ompsim_test_cache = folder
    os.environ["XDG_CACHE_HOME"] = folder
    os.environ.pop("OMPSIM_JIT_CACHE", None)
    os.environ.pop("OMPSIM_JIT_CACHE_MAX", None)


@pytest.fixture(autouse=True)
def _run_compile_cache(request, monkeypatch):
    """Points the matrix's compile cache (conformance/harness/build.py, in the build folder)
    at the run's fresh folder, beside its JIT cache, for every test but the matrix's own cells:
    a test's programs in temporary folders never reach the user's cache. The matrix run by
    pytest (conformance/test_matrix.py, as CI runs it) keeps the build folder's, which later
    runs and CI's other steps share."""
    path = request.node.path
    if path.name == "test_matrix.py" and path.parent.name == "conformance":
        return
    folder = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.basename(folder).startswith(TEST_CACHE_PREFIX):
        monkeypatch.setenv("OMPSIM_COMPILE_CACHE", os.path.join(folder, "compile-cache"))


def pytest_unconfigure(config):
    folder = getattr(config, "_ompsim_test_cache", None)
    if folder:
        import shutil
        shutil.rmtree(folder, ignore_errors=True)


def pytest_addoption(parser):
    # The conformance matrix options are registered here, at the root, because
    # pytest only honours option hooks of the conftest files it loads first.
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "ompsim_conformance_options", os.path.join(paths.ROOT, "conformance", "conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.add_conformance_options(parser)
