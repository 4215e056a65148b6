"""Fixtures of the map checker's tests: each program is compiled once per module."""
import os

import pytest

from check_helpers import PROGRAMS, compile_program


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """built(name) -> executable of tests/check/programs/<name>, compiled once."""
    cache = {}

    def build(name):
        if name not in cache:
            d = tmp_path_factory.mktemp(os.path.splitext(name)[0])
            cache[name] = compile_program(os.path.join(PROGRAMS, name), d)
        return cache[name]

    return build
