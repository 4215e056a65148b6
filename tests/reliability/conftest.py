"""Fixtures of the reliability tests."""
import os

import pytest

from reliability_helpers import PROGRAMS, compile_program


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Compiles a program from tests/reliability/programs once per module: built(name, translate=...)."""
    cache = {}

    def build(name, translate="native", extra=()):
        key = (name, translate, tuple(extra))
        if key not in cache:
            d = tmp_path_factory.mktemp(os.path.splitext(name)[0] + "-" + translate)
            cache[key] = compile_program(os.path.join(PROGRAMS, name), d, translate, extra)
        return cache[key]

    return build
