"""Fixtures shared by the end-to-end test folders under tests/."""
import os

import pytest


@pytest.fixture(scope="module")
def compile_once(tmp_path_factory):
    """compile_once(src, compile) -> compile(src, a fresh folder), run once per source in a module."""
    cache = {}

    def build(src, compile_program):
        if src not in cache:
            d = tmp_path_factory.mktemp(os.path.splitext(os.path.basename(src))[0])
            cache[src] = compile_program(src, d)
        return cache[src]

    return build
