"""Runs the pass plugin's opt + FileCheck tests (lit) against the build in OMPSIM_BUILD_DIR."""
import os
import subprocess
import sys

import pytest

from ompsim_base import paths

HERE = os.path.dirname(os.path.abspath(__file__))


def test_filecheck_suite(tmp_path):
    if not os.path.exists(paths.PASS_PLUGIN):
        pytest.skip("pass plugin not built: %s" % paths.PASS_PLUGIN)
    env = dict(os.environ, OMPSIM_PASS_PLUGIN=paths.PASS_PLUGIN, LLVM_TOOLS_DIR=paths.LLVM_BIN,
               LIT_EXEC_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, paths.tool("lit"), "-sv", HERE], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "Failed" not in r.stdout
