"""The normalized trace of the canonical indirect-call program: golden, stable under ASLR,
and sufficient on its own to diagnose a function-pointer bug."""
import json
import os
import pathlib
import shutil
import subprocess
import re

import pytest

HERE = pathlib.Path(__file__).parent
OMPSIM = str(HERE.parents[2] / "scripts" / "ompsim")
GOLDEN = HERE / "golden" / "indirect_call.sim.jsonl"
#: OMPSIM_UPDATE_GOLDEN=1 rewrites the golden file from this run (review the diff before committing).
UPDATE = os.environ.get("OMPSIM_UPDATE_GOLDEN") == "1"

pytestmark = pytest.mark.e2e


def canonical(trace):
    """Events as a sorted list, with what a recompile may change abstracted away:
    sequence numbers, entry indices, raw device addresses (symbols stay), image size."""
    def field(v):
        if isinstance(v, str):
            v = re.sub(r"(dev:[^ ]+\+0x[0-9a-f]+) \(0x[0-9a-f]+\)", r"\1", v)
            v = re.sub(r"dev:0x[0-9a-f]+", "dev:<addr>", v)
        return v
    events = [json.loads(line) for line in trace.splitlines()]
    return sorted(json.dumps({k: field(v) for k, v in e.items() if k not in ("seq", "index", "bytes")},
                             sort_keys=True) for e in events)


def traced_run(offload, exe, path, args=(), cats="all"):
    env = {"OMPSIM_TRACE": cats, "OMPSIM_TRACE_FILE": str(path), "OMPSIM_TRACE_NORMALIZE": "1"}
    if path.exists():
        path.unlink()
    r = offload.run(exe, backend="sim", args=args, env=env)
    return r, path.read_text()


@pytest.fixture
def program(offload):
    # A relative source path and no -g: the image must not depend on where the test runs.
    shutil.copy(HERE / "indirect_call.c", offload.tmp / "indirect_call.c")
    r = subprocess.run([OMPSIM, "cc", "--translate=pass", "-O1", "indirect_call.c", "-o", "indirect_call.exe"],
                       cwd=offload.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    return offload, offload.tmp / "indirect_call.exe"


def test_normalized_trace_matches_golden(program):
    offload, exe = program
    r, trace = traced_run(offload, exe, offload.tmp / "golden.jsonl")
    assert r.returncode == 0, r.stderr
    if UPDATE:
        GOLDEN.write_text(trace)
    # clang-22 orders offload entries differently from one compile to the next,
    # so compare the events as a multiset, without sequence numbers and entry
    # indices; runs of one binary are compared byte for byte below.
    assert canonical(trace) == canonical(GOLDEN.read_text()), (
        "normalized trace differs from %s; inspect with `scripts/ompsim trace diff`, and rerun with "
        "OMPSIM_UPDATE_GOLDEN=1 if the change is intended" % GOLDEN)


def test_five_runs_under_aslr_give_identical_traces(program):
    offload, exe = program
    with open("/proc/sys/kernel/randomize_va_space") as f:
        assert f.read().strip() != "0", "ASLR is off on this machine; the test would prove nothing"
    traces = []
    for i in range(5):
        r, trace = traced_run(offload, exe, offload.tmp / ("aslr%d.jsonl" % i))
        assert r.returncode == 0, r.stderr
        traces.append(trace)
    assert all(t == traces[0] for t in traces[1:])
    # The same runs without normalization do see ASLR: raw host addresses move.
    raw = []
    for i in range(2):
        p = offload.tmp / ("raw%d.jsonl" % i)
        p.unlink(missing_ok=True)
        offload.run(exe, backend="sim", env={"OMPSIM_TRACE": "table", "OMPSIM_TRACE_FILE": str(p)})
        raw.append([e["host"] for e in map(json.loads, p.read_text().splitlines()) if e["event"] == "pair"])
    assert raw[0] != raw[1], "host addresses did not move between runs"


def test_non_indirect_pointer_is_diagnosable_from_the_trace_alone(program):
    offload, exe = program
    r, trace = traced_run(offload, exe, offload.tmp / "fault.jsonl", args=["plain"])
    assert r.returncode != 0
    events = [json.loads(line) for line in trace.splitlines()]
    table = {e["host"] for e in events if e["cat"] == "table" and e["event"] == "pair"}
    assert table == {"host:add1+0x0", "host:mul2+0x0"}, "the table shows what is translatable"
    misses = [e for e in events if e["event"] == "translate" and e["outcome"] == "miss"]
    assert any(e["host_ptr"] == "host:plain+0x0" for e in misses), "the miss names the host function"
    faults = [e for e in events if e["event"] == "device-fault"]
    assert faults and faults[0]["rip"] == "host:plain+0x0", "the fault names the host function jumped to"
    assert "main_l" in faults[0]["context"]
