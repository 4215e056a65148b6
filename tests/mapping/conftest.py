"""Fixtures of the mapping tests: each program is compiled once per module."""
import os

import pytest

from mapping_helpers import PROGRAMS, compile_program


@pytest.fixture(scope="module")
def built(compile_once):
    """built(name) -> executable of tests/mapping/programs/<name>, compiled once."""
    return lambda name: compile_once(os.path.join(PROGRAMS, name), compile_program)
