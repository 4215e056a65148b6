"""Races between a kernel's teams under the checker (docs/gpu-checks.md): a GPU runs a kernel's
teams at once, and only atomics order them, so teams that add to one mapped counter without an
atomic lose updates there. Under OMPSIM_CHECK the virtual GPU runs the blocks one after another
and names the first access of a block that races with another block's on device memory: both
blocks, both source lines, and the mapping the memory belongs to. A clean kernel (each team its
own elements, an atomic count) prints what stock's host plugin prints, with and without the
checker."""
import os
import re

import pytest

from reliability_helpers import run

pytestmark = pytest.mark.e2e

ARCHS = ["sm_90", "gfx90a"]
PROGRAM = "team_races.c"
CHECK = {"OMPSIM_CHECK": "1"}
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
ORDER = r"a GPU runs a kernel's teams at once, and only atomics order them"


def at(text, column, nth=0):
    """A site as the report names it: the line of PROGRAM holding `text` (its `nth`), `column`."""
    with open(os.path.join(PROGRAMS, PROGRAM)) as f:
        line = [i + 1 for i, t in enumerate(f.read().splitlines()) if text in t][nth]
    return r"\S*%s:%d:%d" % (re.escape(PROGRAM), line, column)


def kernel(function):
    return r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_%s_l\d+" % function


def checked_line(exe, mode):
    return run(exe, "sim", [mode], env=CHECK).single_error()


@pytest.fixture(scope="module")
def stock_clean(gpu_built):
    r = run(gpu_built(PROGRAM, "x86_64"), "host-upstream", ["clean"])
    assert r.rc == 0, r.err
    return r.out


@pytest.mark.parametrize("arch", ARCHS)
def test_a_clean_kernel_runs_as_on_stock_with_and_without_the_checker(gpu_built, stock_clean, arch):
    for env in ({}, CHECK):
        r = run(gpu_built(PROGRAM, arch), "sim", ["clean"], env=env)
        assert (r.rc, r.out, r.err) == (0, stock_clean, ""), env


@pytest.mark.parametrize("arch", ARCHS)
def test_teams_adding_to_a_mapped_counter_without_an_atomic_are_named_with_the_mapping(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "lost")
    site = at("count += 1;", 13, nth=1)
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 1, thread \d+: the read of device memory at dev:0x[0-9a-f]+ "
        r"\(0 bytes into the device copy of 'count' \(4 bytes\)\) at %s races with block 0's write at %s: %s; "
        r"make both atomic, or read it in a later kernel" % (kernel("lost"), site, site, ORDER), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_two_teams_writing_one_element_are_named(gpu_built, arch):
    # Team 0 writes a[1] = 0 over the 0 the host mapped, which changes nothing: the first
    # race is team 2's a[2] over team 1's. clang-22 may store both elements at once (amdgcn's
    # code does), with the first one's line.
    line = checked_line(gpu_built(PROGRAM, arch), "overlap")
    either = "(?:%s|%s)" % (at("a[t] = t;", 12), at("a[t + 1] = t;", 16))
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 2, thread \d+: the write of device memory at dev:0x[0-9a-f]+ "
        r"\(8 bytes into the device copy of 'a' \(68 bytes\)\) at %s races with block 1's write at %s: %s; "
        r"make both atomic \(#pragma omp atomic\), or let one team write it"
        % (kernel("overlap"), at("a[t] = t;", 12), either, ORDER), line), line
