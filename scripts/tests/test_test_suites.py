"""scripts/test-suites: the CI step that runs the public suites through the matrix."""
import os
import subprocess

from ompsim_base import paths

SCRIPT = os.path.join(paths.ROOT, "scripts", "test-suites")


def run(*args):
    return subprocess.run([SCRIPT, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def test_a_clone_without_the_suites_skips_with_one_line(tmp_path):
    r = run(str(tmp_path / "absent"))
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["scripts/test-suites: skipped: %s not found (LLVM's offload/test and "
                                     "OpenMP_VV live there)" % (tmp_path / "absent")]


def test_each_suite_has_its_expectations_file():
    # The step passes conformance/expectations/<suite>.txt with --expectations, which must exist.
    for suite in ("llvm-offload-test", "openmp-vv"):
        assert os.path.isfile(os.path.join(paths.ROOT, "conformance", "expectations", suite + ".txt")), suite



def test_only_the_named_suites_run(tmp_path):
    # scripts/test names the suites CI runs; one the folder lacks is skipped with one line.
    (tmp_path / "openmp-vv").mkdir()
    r = run(str(tmp_path), "llvm-offload-test")
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["scripts/test-suites: llvm-offload-test skipped: %s/llvm-offload-test not found"
                                     % tmp_path]
