"""OMPT for offloading: a tool of ours (ompt_record_tool.c, started by libomp through
OMP_TOOL_LIBRARIES) sees the same target, data-op and submit callbacks in the same order on
ours-host and sim as on stock libomptarget 22 (host-upstream), with the plain and the EMI
callbacks, and the ids tie each operation to its construct.

Known differences, not compared: stock's host plugin initializes its four devices when the
program starts, ompsim's runtime a device when it is first used (both before any event on
it); and stock's plain target callback for `target enter data` carries target_id 0 (its
begin makes no region id), where ompsim's carries the construct's own.
"""
import collections
import os
import re
import subprocess

import pytest

from ompsim_base import paths

pytestmark = pytest.mark.e2e

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.join(paths.ROOT, "conformance", "programs")
BACKENDS = ("host-upstream", "ours-host", "sim")
OURS = ("ours-host", "sim")
#: Programs every backend runs to completion with an `ompsim cc` build: the conformance
#: programs of that kind (indirect calls, vtables, lambdas, Fortran procedure pointers,
#: nowait regions) and one that makes every kind of event.
PROGRAMS = [
    os.path.join(HERE, "programs", "data_constructs.c"),
    *(os.path.join(CONFORMANCE, p) for p in (
        "begin_declare_target_indirect.c", "concurrent_teams_scalar.c", "fp_null.c",
        "fp_reassigned_between_regions.c", "fp_signatures.c", "lambda_captureless.cpp",
        "member_function_pointer_virtual.cpp", "nowait_regions.c", "virtual_device_built.cpp",
        "fortran_procptr_on_device.f90")),
]


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    out = tmp_path_factory.mktemp("ompt-tool") / "ompt_record_tool.so"
    subprocess.run([paths.tool("clang"), "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-fopenmp",
                    os.path.join(HERE, "ompt_record_tool.c"), "-o", str(out)], check=True, capture_output=True)
    return out


def build(src, d):
    exe = d / (os.path.basename(src) + ".exe")
    r = subprocess.run([os.path.join(paths.ROOT, "scripts", "ompsim"), "cc", "-O1", src, "-o", str(exe)],
                       capture_output=True, text=True, cwd=d)
    assert r.returncode == 0, r.stderr
    return exe


def record(exe, backend, mode, tool, d):
    log = d / ("%s.%s.%s.log" % (exe.name, backend, mode))
    env = dict(os.environ, OMP_TOOL_LIBRARIES=str(tool), OMPT_RECORD_FILE=str(log), OMPT_RECORD_MODE=mode)
    r = subprocess.run([os.path.join(paths.ROOT, "scripts", "ompsim"), "run", "--backend", backend, "--",
                        str(exe)], capture_output=True, text=True, env=env, cwd=d, timeout=300)
    assert r.returncode == 0, "%s on %s failed (%d):\n%s" % (exe.name, backend, r.returncode, r.stderr)
    assert log.exists(), "the tool was never started on %s" % backend
    return [l.split(" ", 1) for l in log.read_text().splitlines()]


def items(lines):
    """The run as a list of items in the order each began: a construct (its target begin to
    its end, on its thread, with what happened inside) or an operation outside any. Ids are
    left out; device set-up and tear-down (init, fini, finalize) are not items."""
    open_item, out = {}, []
    for thread, line in lines:
        if line.startswith(("init ", "fini ", "finalize")):
            continue
        line = re.sub(r" (id|op)=\S+", "", line)
        if thread in open_item:
            open_item[thread].append(line)
            if re.match(r"target \S+ end ", line) or (line.startswith(("dataop", "submit")) and " end " in line
                                                         and not open_item[thread][0].startswith("target")):
                del open_item[thread]
            continue
        item = [line]
        out.append(item)
        if line.startswith("target ") or " begin " in line:
            open_item[thread] = item
    return [tuple(i) for i in out]


def check_ids(lines, backend):
    """Every operation of a construct carries its id; construct and operation ids are unique
    and non-zero; an EMI tool got back at each end the ids it set at the begin."""
    assert not [l for _, l in lines if l.startswith("mismatch")], (backend, lines)
    current, constructs, ops = {}, set(), set()
    for thread, line in lines:
        ident = re.search(r" id=(\d+)", line)
        op = re.search(r" op=(\d+)", line)
        m = re.match(r"target (\S+) (begin|end) ", line)
        if m and m.group(2) == "begin":
            assert ident and ident.group(1) != "0", (backend, line)
            assert ident.group(1) not in constructs, (backend, "construct id used twice", line)
            constructs.add(ident.group(1))
            current[thread] = ident.group(1)
        elif m:
            assert current.pop(thread) == ident.group(1), (backend, line)
        elif line.startswith(("dataop", "submit")):
            assert ident.group(1) == current.get(thread, "0"), (backend, "operation outside its construct", line)
            if " end " not in line:
                assert op.group(1) not in ops, (backend, "host_op_id used twice", line)
                ops.add(op.group(1))


def check_devices(lines, backend):
    """A device is initialized before its first event and finalized at the end."""
    inited, finished = set(), set()
    for _, line in lines:
        if line.startswith("init "):
            inited.add(line.split("dev=")[1])
        elif line.startswith("fini "):
            finished.add(line.split("dev=")[1])
        else:
            for dev in re.findall(r"(?:dev=|src=|dst=)(\d+)", line):
                assert dev in inited, (backend, "an event on device %s before its initialization" % dev, line)
    assert finished == inited, (backend, inited, finished)


@pytest.mark.parametrize("mode", ["plain", "emi"])
@pytest.mark.parametrize("program", PROGRAMS, ids=os.path.basename)
def test_ompsim_reports_what_stock_reports(tool, tmp_path, program, mode):
    exe = build(program, tmp_path)
    runs = {b: record(exe, b, mode, tool, tmp_path) for b in BACKENDS}
    stock = items(runs["host-upstream"])
    assert any(i[0].startswith("target target begin") for i in stock), stock  # the tool saw the regions
    concurrent = "nowait" in open(program).read()
    for b in OURS:
        ours = items(runs[b])
        if concurrent:
            # nowait regions run as tasks: their order between threads is the scheduler's.
            assert collections.Counter(ours) == collections.Counter(stock), b
        else:
            assert ours == stock, b
        check_ids(runs[b], b)
        check_devices(runs[b], b)


def test_a_tool_that_declines_gets_nothing(tool, tmp_path):
    """A tool whose ompt_start_tool answers NULL (ours does without OMPT_RECORD_FILE) is
    never initialized: the runtime binds no callback and the program runs as without it."""
    exe = build(PROGRAMS[0], tmp_path)
    for b in OURS:
        env = {k: v for k, v in os.environ.items() if k != "OMPT_RECORD_FILE"}
        env["OMP_TOOL_LIBRARIES"] = str(tool)
        r = subprocess.run([os.path.join(paths.ROOT, "scripts", "ompsim"), "run", "--backend", b, "--", str(exe)],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert (r.returncode, r.stdout, r.stderr) == (0, "ok\n", ""), b
