"""What the GPU checks' one-line reports name, as the tests of tests/gpu_checks match them: a
source line of a program in programs/, a kernel, and the one line of a run under the checker."""
import os
import re

from reliability_helpers import run

ARCHS = ["sm_90", "gfx90a"]
CHECK = {"OMPSIM_CHECK": "1"}
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def line_of(program, text, nth=0):
    """The source line of programs/`program` holding `text` (its `nth` occurrence)."""
    with open(os.path.join(PROGRAMS, program)) as f:
        return [i + 1 for i, t in enumerate(f.read().splitlines()) if text in t][nth]


def at(program, text, column, nth=0):
    """A site as the report names it (a pattern): the source file, the line holding `text`, `column`."""
    return r"\S*%s:%d:%d" % (re.escape(program), line_of(program, text, nth), column)


def kernel(function):
    """The pattern of the offload kernel of a target region in `function`."""
    return r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_%s_l\d+" % function


def checked_line(exe, mode):
    """The one ompsim: line of `exe` `mode` on sim under the checker (the failure contract holds)."""
    return run(exe, "sim", [mode], env=CHECK).single_error()
