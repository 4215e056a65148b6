"""The harness unit tests import `harness` from conformance/ (no compiler needed)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def compile_cache(tmp_path, monkeypatch):
    """Each test compiles into a compile cache of its own (harness/build.py), so its
    programs in temporary folders never reach the build folder's, and a test sees the cache
    its own cells made."""
    cache = tmp_path / "compile-cache"
    monkeypatch.setenv("OMPSIM_COMPILE_CACHE", str(cache))
    return cache
