"""Fixtures of the diagnostics tests: programs are compiled once per module."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
# The reliability tests' helpers compile, run and check the one-line failure contract.
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reliability"))

from reliability_helpers import compile_program  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """built(name, extra=()) -> executable of tests/diagnostics/programs/<name> (clang-22, -O1 -g)."""
    cache = {}

    def build(name, extra=()):
        key = (name, tuple(extra))
        if key not in cache:
            d = tmp_path_factory.mktemp(os.path.splitext(name)[0])
            cache[key] = compile_program(os.path.join(PROGRAMS, name), d, "native", extra)
        return cache[key]

    return build
