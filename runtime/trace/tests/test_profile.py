"""LIBOMPTARGET_PROFILE: a Chrome-trace JSON file of the runtime's work on every ompsim
backend, valid Trace Event Format and shaped as stock libomptarget 22 writes it."""
import json
import re

import pytest

from trace_event_format import complete_events, problems

pytestmark = pytest.mark.e2e

PROGRAM = r"""
#include <stdio.h>
int main(void) {
  int a[64];
  for (int i = 0; i < 64; ++i)
    a[i] = i;
#pragma omp target teams distribute parallel for map(tofrom: a)
  for (int i = 0; i < 64; ++i)
    a[i] *= 2;
  printf("a[63]=%d\n", a[63]);
  return a[63] != 126;
}
"""
KERNEL_LINE = 7  # the line of the target pragma: clang names the kernel ..._main_l7
OURS = ["ours-host", "sim", "sim-ir"]


def compile_for(offload, backend):
    image = "ir" if backend == "sim-ir" else "elf"
    return offload.compile(PROGRAM, name="profiled.c", image=image, translate="native" if image == "elf" else "pass")


def profiled_run(offload, backend, tmp_path, **env):
    exe = compile_for(offload, backend)
    path = tmp_path / ("%s.json" % backend)
    r = offload.run(exe, backend=backend, env=dict({"LIBOMPTARGET_PROFILE": str(path)}, **env))
    assert r.returncode == 0 and "a[63]=126" in r.stdout, r.stderr
    return r, json.loads(path.read_text())


def names(data):
    return [ev["name"] for ev in complete_events(data)]


@pytest.mark.parametrize("backend", OURS)
def test_profile_holds_the_kernel_and_its_copies(offload, tmp_path, backend):
    r, data = profiled_run(offload, backend, tmp_path, LIBOMPTARGET_PROFILE_GRANULARITY="0")
    assert r.stderr == "", r.stderr
    assert problems(data, nest_slack_us=1) == []
    assert isinstance(data.get("beginningOfTime"), int)
    meta = {ev["name"]: ev["args"]["name"] for ev in data["traceEvents"] if ev["ph"] == "M"}
    assert meta["process_name"] == "libomptarget"  # as stock names its process
    kernels = [ev for ev in complete_events(data) if ev["name"] == "Kernel Target"]
    assert len(kernels) == 1, names(data)
    assert re.search(r"NumArguments=\d+;NumTeams=\d+;TripCount=64;Kernel=__omp_offloading_\w+_main_l%d;Device=0"
                     % KERNEL_LINE, kernels[0]["args"]["detail"]), kernels[0]
    copies = [(ev["name"], ev["args"]["detail"]) for ev in complete_events(data)
              if ev["name"] in ("HostToDev", "DevToHost")]
    assert ("HostToDev", "Size=256B") in copies and ("DevToHost", "Size=256B") in copies, copies
    (target,) = [ev for ev in complete_events(data) if ev["name"] == "Runtime: target exe"]
    # The kernel and its copies lie inside the target region's section.
    for ev in kernels + [ev for ev in complete_events(data) if ev["name"] in ("HostToDev", "DevToHost")]:
        assert target["ts"] <= ev["ts"] and ev["ts"] + ev["dur"] <= target["ts"] + target["dur"] + 1, (ev, target)
    totals = {ev["name"]: ev["args"]["count"] for ev in complete_events(data) if ev["name"].startswith("Total ")}
    assert totals["Total Kernel Target"] == 1 and totals["Total Runtime: target exe"] == 1, totals
    if backend.startswith("sim"):
        # The sim plugin's own sections: the executor, the image and the launch round trip.
        assert {"Executor start", "Executor load image"} <= set(names(data))
        assert any(re.fullmatch(r"Kernel '__omp_offloading_\w+_main_l%d'" % KERNEL_LINE, n) for n in names(data))


def test_stock_writes_the_same_sections(offload, tmp_path):
    """The oracle: stock's profile of the same program has the sections ompsim's has."""
    _, stock = profiled_run(offload, "host-upstream", tmp_path, LIBOMPTARGET_PROFILE_GRANULARITY="0")
    _, ours = profiled_run(offload, "ours-host", tmp_path, LIBOMPTARGET_PROFILE_GRANULARITY="0")
    assert problems(stock, nest_slack_us=1) == []
    shared = {"Runtime: target exe", "Kernel Target", "HostToDev", "DevToHost"}
    assert shared <= set(names(stock)) and shared <= set(names(ours))
    for data in (stock, ours):
        for name in ("HostToDev", "DevToHost"):
            assert [ev["args"]["detail"].split(";")[-1] for ev in complete_events(data)
                    if ev["name"] == name] == ["Size=256B"]


@pytest.mark.parametrize("backend", ["host-upstream", "ours-host", "sim"])
def test_granularity_drops_short_sections_but_keeps_totals(offload, tmp_path, backend):
    # Nothing of this run lasts 2000 s, so only the per-name totals are left, as in stock.
    _, data = profiled_run(offload, backend, tmp_path, LIBOMPTARGET_PROFILE_GRANULARITY="2000000000")
    assert [n for n in names(data) if not n.startswith("Total ")] == []
    assert "Total Kernel Target" in names(data)


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_unopenable_profile_fails_the_run(offload, tmp_path, backend):
    exe = compile_for(offload, backend)
    path = tmp_path / "missing-dir" / "p.json"
    r = offload.run(exe, backend=backend, env={"LIBOMPTARGET_PROFILE": str(path)})
    assert "a[63]=126" in r.stdout, r.stderr  # the program still runs
    assert r.returncode == 1
    assert r.stderr.splitlines() == ["ompsim: profile lost: LIBOMPTARGET_PROFILE '%s': cannot open it: "
                                     "No such file or directory" % path], r.stderr
