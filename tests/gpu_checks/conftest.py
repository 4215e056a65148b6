"""Fixtures of the GPU checks' tests: each program is built once per module and architecture."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
# The reliability tests' helpers compile, run and check the one-line failure contract.
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reliability"))

from reliability_helpers import compile_program, run  # noqa: E402


@pytest.fixture(scope="module")
def gpu_built(tmp_path_factory):
    """gpu_built(name, arch, extra=()) -> executable of tests/gpu_checks/programs/<name> built for
    the GPU `arch` (sm_90, gfx90a) with `ompsim cc -O2 -g` and `extra`; arch "x86_64" builds it
    for the host (plain clang-22), the stock oracle's build."""
    cache = {}

    def build(name, arch, extra=()):
        key = (name, arch, tuple(extra))
        if key not in cache:
            d = tmp_path_factory.mktemp(os.path.splitext(name)[0] + "-" + arch)
            if arch == "x86_64":
                cache[key] = compile_program(os.path.join(PROGRAMS, name), d, "native", ["-O2", *extra])
            else:
                cache[key] = compile_program(os.path.join(PROGRAMS, name), d, "native-cc",
                                             ["--offload-arch=" + arch, "-O2", *extra])
        return cache[key]

    return build


@pytest.fixture(scope="module")
def stock(gpu_built, request):
    """stock(mode) -> what the test module's PROGRAM prints in `mode` on stock's host plugin, built
    for the host: the oracle of its clean runs."""
    program = request.module.PROGRAM

    def output(mode):
        r = run(gpu_built(program, "x86_64"), "host-upstream", [mode])
        assert r.rc == 0, r.err
        return r.out
    return output
