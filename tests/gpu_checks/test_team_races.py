"""Races between a kernel's teams under the checker (docs/gpu-checks.md): a GPU runs a kernel's
teams at once, and only atomics order them, so teams that add to one mapped counter without an
atomic lose updates there. Under OMPSIM_CHECK the virtual GPU runs the blocks one after another
and names the first access of a block that races with another block's on device memory: both
blocks, both source lines, and the mapping the memory belongs to. Clean kernels (each team its
own elements, an atomic count, a count in a critical region) print what stock's host plugin
prints, with and without the checker."""
import re

import pytest

from gpu_check_lines import ARCHS, CHECK, checked_line, kernel
from gpu_check_lines import at as site_of
from reliability_helpers import run

pytestmark = pytest.mark.e2e

PROGRAM = "team_races.c"
ORDER = r"a GPU runs a kernel's teams at once, and only atomics order them"


def at(text, column, nth=0):
    """A site of PROGRAM as the report names it."""
    return site_of(PROGRAM, text, column, nth)


@pytest.mark.parametrize("arch, mode", [("sm_90", "clean"), ("gfx90a", "clean"), ("sm_90", "critical")])
def test_clean_kernels_run_as_on_stock_with_and_without_the_checker(gpu_built, stock, arch, mode):
    # "critical": the teams' updates of one mapped count are ordered by the critical region's
    # lock, which the GPU device runtime tells the checker about.
    expected = stock(mode)
    for env in ({}, CHECK):
        r = run(gpu_built(PROGRAM, arch), "sim", [mode], env=env)
        assert (r.rc, r.out, r.err) == (0, expected, ""), env


@pytest.mark.parametrize("arch", ARCHS)
def test_teams_adding_to_a_mapped_counter_without_an_atomic_are_named_with_the_mapping(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "lost")
    site = at("count += 1;", 13, nth=2)
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


def test_a_load_clang_moved_out_of_a_critical_region_races_between_teams(gpu_built):
    # clang-22 at -O2 -g for amdgcn loads the critical region's count before the loop that takes
    # the lock lane by lane (a load with no source line): each team reads it unlocked while
    # another team updates it, which loses updates on a GPU. The virtual GPU's blocks happen not to
    # overlap there; the checker names the unlocked read.
    line = checked_line(gpu_built(PROGRAM, "gfx90a"), "critical")
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 1, thread \d+: the read of device memory at dev:0x[0-9a-f]+ "
        r"\(0 bytes into the device copy of 'count' \(4 bytes\)\) at function "
        r"'__omp_offloading_\w+_critical_l\d+\w*_omp_outlined' races with block 0's write at %s: %s; "
        r"make both atomic, or read it in a later kernel"
        % (kernel("critical"), at("count += 1;", 11, nth=1), ORDER), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_teams_adding_to_a_declare_target_global_without_an_atomic_are_named_with_the_global(gpu_built, arch):
    line = checked_line(gpu_built(PROGRAM, arch), "global")
    site = at("hits += 1;", 12)
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 1, thread \d+: the read of device memory at dev:0x[0-9a-f]+ "
        r"\(0 bytes into the device copy of 'hits' \(4 bytes\)\) at %s races with block 0's write at %s: %s; "
        r"make both atomic, or read it in a later kernel" % (kernel("global"), site, site, ORDER), line), line


@pytest.mark.parametrize("arch", ARCHS)
def test_teams_adding_to_a_device_heap_block_without_an_atomic_are_named_with_the_block(gpu_built, arch):
    # One kernel mallocs the block, the next kernel's teams each add one to it: the heap is device
    # memory every team reaches, as the mapped data is.
    line = checked_line(gpu_built(PROGRAM, arch), "heap")
    site = at("counts[0] += 1;", 17)
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s: block 1, thread \d+: the read of device-heap memory at 0x([0-9a-f]+) "
        r"\(byte 0 of the 4-byte device-heap block at 0x\1 that device malloc returned to block 0, thread \d+ "
        r"called at %s\) at %s races with block 0's write at %s: %s; make both atomic, or read it in a later "
        r"kernel" % (kernel("heap"), at("malloc(sizeof(int))", 21), site, site, ORDER), line), line
