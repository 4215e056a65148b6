"""LIBOMPTARGET_INFO: the lines stock libomptarget 22 itself prints (a construct's map
items, "Mapping exists", "Creating new map entry", "Removing map entry", the mapping-table
dumps, "does not have a valid device counterpart", the copies) come from ompsim's backends
in the same words, fields and order, under the same bits. Device and host addresses differ
from run to run and between backends, so every hex number is masked."""
import os
import re
import subprocess

import pytest

from mapping_helpers import BACKENDS, OMPSIM, PROGRAMS, compile_program, ompsim_lines, run

pytestmark = pytest.mark.e2e

MODES = ["target", "data", "enterexit", "update", "leftover", "members", "mapper", "global", "hold", "ptr", "nowait", "firstprivate"]
HEX = re.compile(r"0x[0-9a-f]+")


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """The program built with -g (clang's map names: Name=a, a[2:4]) and without (unknown)."""
    d = tmp_path_factory.mktemp("info_lines")
    src = os.path.join(PROGRAMS, "info_lines.c")
    plain = os.path.join(str(d), "info_lines_nog.exe")
    r = subprocess.run([OMPSIM, "cc", "-O1", src, "-o", plain, "-fopenmp-extensions"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, cwd=str(d), timeout=300)
    assert r.returncode == 0, r.stdout
    return {"-g": compile_program(src, d, extra=["-fopenmp-extensions"]), "no -g": plain}


def info_lines(r):
    """The lines of stock's libomptarget (not its plugins' launch line), addresses masked."""
    return [HEX.sub("0x…", l) for l in r.stderr.splitlines() if l.startswith("omptarget device ")]


def outputs(exe, mode, bits):
    out = {}
    for backend in BACKENDS:
        # Four devices everywhere, as stock's host plugin has: the table dumps name each.
        r = run(exe, backend, env={"LIBOMPTARGET_INFO": bits, "OMPSIM_NUM_DEVICES": "4"},
                args=[mode] if mode else [])
        assert r.returncode == 0, "%s: exit %d\n%s" % (backend, r.returncode, r.stderr)
        assert ompsim_lines(r.stderr) == [], r.stderr
        out[backend] = (r.stdout, info_lines(r))
    return out


@pytest.mark.parametrize("debug", ["-g", "no -g"])
@pytest.mark.parametrize("mode", MODES)
def test_every_bit_prints_stocks_lines(programs, mode, debug):
    """-1 turns on every bit: bits 0x1, 0x2, 0x4, 0x8, 0x20 and 0x40 all print."""
    out = outputs(programs[debug], mode, "-1")
    stock_stdout, stock = out["host-upstream"]
    assert stock, "stock printed no info lines"
    for backend in BACKENDS[1:]:
        assert out[backend][0] == stock_stdout, backend
        assert out[backend][1] == stock, "%s differs from stock:\n%s" % (
            backend, "\n".join(diff(stock, out[backend][1])))


@pytest.mark.parametrize("bits", ["1", "2", "4", "8", "63", "64"])
@pytest.mark.parametrize("mode", ["target", "enterexit", "mapper", "firstprivate"])
def test_single_bits_print_stocks_lines(programs, mode, bits):
    out = outputs(programs["-g"], mode, bits)
    stock = out["host-upstream"][1]
    for backend in BACKENDS[1:]:
        assert out[backend][1] == stock, "%s differs from stock:\n%s" % (
            backend, "\n".join(diff(stock, out[backend][1])))


def test_lambda_captures_print_stocks_lines(tmp_path):
    """C++ lambdas: the captures' look-ups follow the lambda's own item, and the copy of the
    lambda (firstprivate, with no entry of its own) is named as stock names it, after the
    table entry its look-up ends on."""
    exe = compile_program(os.path.join(PROGRAMS, "lambda_capture.cpp"), tmp_path)
    out = outputs(exe, "", "-1")
    stock = out["host-upstream"][1]
    assert any("Name=arr" in l and "Copying data from host to device" in l for l in stock), stock
    for backend in BACKENDS[1:]:
        assert out[backend][1] == stock, "%s differs from stock:\n%s" % (
            backend, "\n".join(diff(stock, out[backend][1])))


def test_lines_read_as_stocks(programs):
    """What the differential tests compare is there: spot checks of stock's texts."""
    (_, lines) = outputs(programs["-g"], "enterexit", "63")["sim"]
    dev0 = "omptarget device 0 info: "
    expected = [
        "Entering OpenMP data region with being_mapper at info_lines.c:43:1 with 3 arguments:",
        "to(a[2:4])[16] ",
        "Creating new map entry with HstPtrBase=0x…, HstPtrBegin=0x…, TgtAllocBegin=0x…, "
        "TgtPtrBegin=0x…, Size=16, DynRefCount=1, HoldRefCount=0, Name=a[2:4]",
        "Mapping exists with HstPtrBegin=0x…, TgtPtrBegin=0x…, Size=16, DynRefCount=2 (incremented), "
        "HoldRefCount=0, Name=b",
        "Mapping exists with HstPtrBegin=0x…, TgtPtrBegin=0x…, Size=16, DynRefCount=0 "
        "(reset, delayed deletion), HoldRefCount=0",
        "Removing map entry with HstPtrBegin=0x…, TgtPtrBegin=0x…, Size=16, Name=a[2:4]",
        "Exiting OpenMP data region with end_mapper at info_lines.c:54:1 with 1 arguments:",
        "alloc(b)[16] ",
        "attach(p[0:4])[8] ",
        "0x… 0x… 16       1           0            p[0:4] at info_lines.c:38:8",
    ]
    for text in expected:
        assert dev0 + text in lines, text
    assert not [l for l in lines if "Launching kernel" in l], lines


def test_no_info_prints_nothing(programs):
    for backend in BACKENDS[1:]:
        r = run(programs["-g"], backend, args=["enterexit"])
        assert r.returncode == 0 and "omptarget" not in r.stderr, r.stderr


def diff(a, b):
    import difflib
    return list(difflib.unified_diff(a, b, "stock", "ours", lineterm="", n=2))
