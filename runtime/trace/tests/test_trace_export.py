"""`ompsim trace export`: a JSON-lines trace of a real program on sim becomes a timeline in
Chrome's Trace Event Format (Perfetto's JSON importer), checked against the format's rules."""
import json
import pathlib
import re
import subprocess

import pytest

from trace_event_format import complete_events, problems

pytestmark = pytest.mark.e2e

OMPSIM = str(pathlib.Path(__file__).parents[3] / "scripts" / "ompsim")

#: Two host threads, each mapping an array and launching a kernel on its own device.
PROGRAM = r"""
#include <omp.h>
#include <stdio.h>
int scale(int x) { return 3 * x; }
#pragma omp declare target to(scale) indirect
int main(void) {
  int sums[2] = {0, 0};
#pragma omp parallel num_threads(2)
  {
    int t = omp_get_thread_num();
    int a[256];
    int (*f)(int) = scale;
    for (int i = 0; i < 256; ++i)
      a[i] = i;
#pragma omp target teams distribute parallel for device(t) map(tofrom: a)
    for (int i = 0; i < 256; ++i)
      a[i] = f(a[i]);
    for (int i = 0; i < 256; ++i)
      sums[t] += a[i];
  }
  printf("sums=%d,%d\n", sums[0], sums[1]);
  return sums[0] != 97920 || sums[1] != 97920;
}
"""


def export(src, dst, fmt="perfetto"):
    return subprocess.run([OMPSIM, "trace", "export", "--format=" + fmt, str(src), "-o", str(dst)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


#: The traced run, made once per test process (tmp folders outlive the session's tests).
_TRACED = {}


@pytest.fixture
def traced(offload):
    """The trace of PROGRAM on sim with two devices."""
    if not _TRACED:
        exe = offload.compile(PROGRAM, name="two_threads.c", translate="pass")
        trace = offload.tmp / "trace.jsonl"
        r = offload.run(exe, backend="sim", env={"OMPSIM_NUM_DEVICES": "2", "OMPSIM_TRACE": "all",
                                                 "OMPSIM_TRACE_FILE": str(trace)})
        assert r.returncode == 0 and r.stdout == "sums=97920,97920\n", r.stderr
        _TRACED["value"] = (offload.tmp, trace)
    return _TRACED["value"]


@pytest.mark.parametrize("fmt", ["perfetto", "chrome"])
def test_export_is_a_valid_timeline_of_the_run(traced, fmt):
    tmp, trace = traced
    out = tmp / ("timeline-%s.json" % fmt)
    r = export(trace, out, fmt)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    data = json.loads(out.read_text())
    assert problems(data) == []
    events = data["traceEvents"]
    processes = {ev["pid"]: ev["args"]["name"] for ev in events if ev["name"] == "process_name"}
    threads = {(ev["pid"], ev["tid"]): ev["args"]["name"] for ev in events if ev["name"] == "thread_name"}
    # One track per device (named with its executor) and per host thread that traced.
    devices = sorted(n for n in processes.values() if n.startswith("device "))
    assert [re.sub(r" \(executor pid \d+\)", "", n) for n in devices] == ["device 0", "device 1"], processes
    assert all("executor pid" in n for n in devices)
    host_pids = [p for p, n in processes.items() if n.startswith("host process")]
    assert len(host_pids) == 1
    host_threads = [t for (p, t) in threads if p == host_pids[0]]
    launching = {ev["tid"] for ev in events if ev["pid"] == host_pids[0] and ev["name"].startswith("target ")}
    assert len(launching) == 2 and launching <= set(host_threads), (launching, threads)
    # Each device ran the kernel once, named, as a slice; each copy of the array is a slice.
    kernel = re.compile(r"__omp_offloading_\w+_main_l\d+")
    for name, pid in ((n, p) for p, n in processes.items() if n.startswith("device ")):
        on_device = [ev for ev in complete_events(data) if ev["pid"] == pid]
        assert [ev["name"] for ev in on_device if ev["cat"] == "launch" and kernel.fullmatch(ev["name"])], name
        # (the 8-byte reads before are the runtime's reads of the image's address globals)
        assert sorted(ev["name"] for ev in on_device if ev["cat"] == "transfer" and "1024B" in ev["name"]) == [
            "DevToHost 1024B", "HostToDev 1024B"], name
    # Registration, maps and translations are there as instants.
    instants = {ev["name"].split(" ")[0] + " " + ev["name"].split(" ")[1] for ev in events if ev["ph"] == "i"}
    assert {"image register", "map enter", "map exit", "translate summary", "table publish"} <= instants, instants
    translated = [ev for ev in events if ev["name"].startswith("translate translate")]
    device_pids = {p for p, n in processes.items() if n.startswith("device ")}
    assert translated and all(ev["pid"] in device_pids and ev["args"]["outcome"] in ("hit", "miss")
                              for ev in translated)


def test_perfetto_and_chrome_write_the_same_file(traced):
    tmp, trace = traced
    assert export(trace, tmp / "p.json", "perfetto").returncode == 0
    assert export(trace, tmp / "c.json", "chrome").returncode == 0
    assert (tmp / "p.json").read_text() == (tmp / "c.json").read_text()


def test_a_device_fault_ends_the_kernel_slice(tmp_path):
    """A synthetic trace: a kernel that faults is a slice that ends at the fault, named so."""
    lines = [
        '{"cat":"launch","event":"launch","device":0,"kernel":"k","args":0,"teams":1,"thread_limit":1,"pid":5,"tid":5,"ts_us":100,"seq":0}',
        '{"cat":"fault","event":"device-fault","device":0,"context":"kernel k","signal":11,"addr":"0x0","rip":"0x1","tid":9,"pid":5,"tid":5,"ts_us":150,"seq":1}',
    ]
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    r = export(trace, tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    data = json.loads((tmp_path / "t.json").read_text())
    assert problems(data) == []
    (k,) = [ev for ev in complete_events(data) if ev["name"] == "k"]
    assert (k["ts"], k["dur"], k["args"]["ended_by"]) == (0, 50, "fault device-fault")


def test_a_normalized_trace_is_refused(tmp_path):
    trace = tmp_path / "n.jsonl"
    trace.write_text('{"cat":"image","event":"register","owner":"./p","images":1,"seq":0}\n')
    r = export(trace, tmp_path / "n.json")
    assert r.returncode == 2 and not (tmp_path / "n.json").exists()
    assert r.stderr == ("ompsim: %s:1: no time on this event (a trace written with OMPSIM_TRACE_NORMALIZE=1 has "
                        "none): export a trace written without it\n" % trace)


def test_the_docs_renderer_draws_the_export(traced):
    """docs/tools/render_timeline.py (the picture in docs/trace-schema.md) reads the export."""
    pytest.importorskip("matplotlib")
    tmp, trace = traced
    assert export(trace, tmp / "r.json").returncode == 0
    script = pathlib.Path(__file__).parents[3] / "docs" / "tools" / "render_timeline.py"
    r = subprocess.run(["/usr/bin/python3", str(script), str(tmp / "r.json"), "-o", str(tmp / "r.png")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"\S+r\.png: 4 tracks, \d+ events\n", r.stdout), r.stdout
    assert (tmp / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
