"""Fixtures of the map checker's tests: each program is compiled once per module."""
import os

import pytest

from check_helpers import PROGRAMS, compile_program


@pytest.fixture(scope="module")
def built(compile_once):
    """built(name) -> executable of tests/check/programs/<name>, compiled once."""
    return lambda name: compile_once(os.path.join(PROGRAMS, name), compile_program)
