"""Fixtures of the tracking tests: tests/tracking/programs/track.c (and its C++ build) built once
per module for the host and for each GPU architecture."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
# The reliability tests' helpers compile and run programs and watch for leftover executors.
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reliability"))

from reliability_helpers import compile_program  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """built(arch, name="track.c") -> executable of programs/<name> built with -O0 -g (so that each
    call's frame names its own line): for the host
    with plain clang-22 (arch "x86_64", what stock runs too), else with `ompsim cc
    --offload-arch=<arch>`."""
    cache = {}

    def build(arch, name="track.c"):
        key = (arch, name)
        if key not in cache:
            d = tmp_path_factory.mktemp(name.replace(".", "-") + "-" + arch)
            src = os.path.join(PROGRAMS, name)
            if arch == "x86_64":
                cache[key] = compile_program(src, d, "native", ["-O0"])
            else:
                cache[key] = compile_program(src, d, "native-cc", ["--offload-arch=" + arch, "-O0"])
        return cache[key]

    return build
