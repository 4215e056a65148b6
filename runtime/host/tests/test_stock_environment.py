"""Stock libomptarget 22's environment variables on ompsim (the table in docs/environment.md):
each one marked honoured has its effect here, on ours-host and sim, checked against stock
(host-upstream) where stock shows it; the ones ompsim does not honour are named once."""
import pathlib
import re

import pytest

pytestmark = pytest.mark.e2e

OURS = ["ours-host", "sim"]

COPY_PROGRAM = r"""
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

QUERY_PROGRAM = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int teams = -1, limit = -1, host = -1;
#pragma omp target teams map(from: teams, limit, host)
  if (omp_get_team_num() == 0) {
    teams = omp_get_num_teams();
    limit = omp_get_thread_limit();
    host = omp_is_initial_device();
  }
  printf("default=%d teams=%d limit=%d host=%d\n", omp_get_default_device(), teams, limit, host);
  return 0;
}
"""

INFO_LINE = re.compile(r"omptarget device \d+ info: (.*)")


def info_lines(stderr):
    return [m.group(1) for m in map(INFO_LINE.fullmatch, stderr.splitlines()) if m]


def ompsim_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("ompsim:")]


def copies(lines):
    """(direction, size) of each copy line, the part stock and ompsim print alike."""
    out = []
    for l in lines:
        m = re.match(r"Copying data from (host to device|device to host), .*Size=(\d+)", l)
        if m:
            out.append((m.group(1), int(m.group(2))))
    return out


@pytest.fixture
def copy_exe(offload):
    return offload.compile(COPY_PROGRAM, name="copies.c")


@pytest.mark.parametrize("backend", OURS)
@pytest.mark.parametrize("value", ["-1", "33", "0x21", " +33"])
def test_info_all_bits_as_stock_reads_them(offload, copy_exe, backend, value):
    """-1 is every bit (stock reads the variable with std::stoi); 0x hex is ompsim's extension."""
    r = offload.run(copy_exe, backend=backend, env={"LIBOMPTARGET_INFO": value})
    assert r.returncode == 0 and "a[63]=126" in r.stdout, r.stderr
    assert ompsim_lines(r.stderr) == [], r.stderr
    lines = info_lines(r.stderr)
    assert any(re.fullmatch(r"Entering OpenMP kernel at \S+:\d+:\d+ with 1 arguments:", l) for l in lines), lines
    assert "tofrom(a)[256] " in lines or "tofrom(unknown)[256] " in lines, lines
    assert copies(lines) == [("host to device", 256), ("device to host", 256)], lines


@pytest.mark.parametrize("backend", OURS)
def test_info_bits_match_stock_copy_lines(offload, copy_exe, backend):
    """Bit 0x20 alone: the copy lines stock prints, the same copies in the same order."""
    stock = offload.run(copy_exe, backend="host-upstream", env={"LIBOMPTARGET_INFO": "32"})
    ours = offload.run(copy_exe, backend=backend, env={"LIBOMPTARGET_INFO": "32"})
    assert stock.returncode == 0 and ours.returncode == 0, (stock.stderr, ours.stderr)
    assert copies(info_lines(ours.stderr)) == copies(info_lines(stock.stderr)) != []
    assert not any(l.startswith(("Launching kernel", "Entering OpenMP")) for l in info_lines(ours.stderr))


def test_ours_host_launch_lines_are_stocks_host_plugin_lines(offload):
    """Bit 0x10: stock's host plugin says every kernel runs as one block of one thread in
    Generic mode (its kernels fork libomp's teams themselves); ours-host prints the same lines
    (sim prints its own teams and threads: simulator/tests/test_sim_gpu_model.py)."""
    exe = offload.compile(COPY_PROGRAM, name="copies.c")
    lines = {}
    for backend in ("host-upstream", "ours-host"):
        r = offload.run(exe, backend=backend, env={"LIBOMPTARGET_INFO": "16"})
        assert r.returncode == 0, r.stderr
        lines[backend] = [l for l in r.stderr.splitlines() if "PluginInterface" in l]
    assert lines["ours-host"] == lines["host-upstream"], lines
    assert len(lines["ours-host"]) == 1 and re.fullmatch(
        r'"PluginInterface" device 0 info: Launching kernel __omp_offloading_\w+_main_l\d+ with \[1,1,1\] blocks '
        r'and \[1,1,1\] threads in Generic mode', lines["ours-host"][0]), lines


NAMED_COPY_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
int G;
#pragma omp declare target
int *P;
#pragma omp end declare target
int main(void) {
  int a[3] = {2, 5, 8};
  P = (int *)malloc(sizeof(int));
  *P = 42;
#pragma omp target map(P[:1], G)
  {
    G = a[1];
    *P = 2 * a[2];
  }
  printf("G=%d *P=%d\n", G, *P);
  return 0;
}
"""

ADDRESS = re.compile(r"0x[0-9a-f]{16}")


@pytest.mark.parametrize("backend", OURS)
def test_info_copy_lines_read_as_stocks(offload, backend):
    """Bit 0x20: stock's copy lines word for word (addresses as 0x and 16 hex digits, the
    mapped item's Name=: clang's map name under -g, a declare target global's own name for
    the attach of the pointer P into it)."""
    exe = offload.compile(NAMED_COPY_PROGRAM, name="named_copies.c")
    runs = {b: offload.run(exe, backend=b, env={"LIBOMPTARGET_INFO": "32"}) for b in ("host-upstream", backend)}
    for r in runs.values():
        assert r.returncode == 0 and r.stdout == "G=5 *P=16\n", r.stderr
    masked = {b: [ADDRESS.sub("ADDR", l) for l in r.stderr.splitlines() if "info: Copying" in l]
              for b, r in runs.items()}
    assert masked[backend] == masked["host-upstream"], masked
    line = "omptarget device 0 info: Copying data from {}, {}=ADDR, {}=ADDR, Size={}, Name={}"
    h2d, d2h = ("host to device", "HstPtr", "TgtPtr"), ("device to host", "TgtPtr", "HstPtr")
    assert masked[backend] == [line.format(*h2d, 4, "G"), line.format(*h2d, 12, "a"),
                               line.format(*h2d, 4, "P[:1]"), line.format(*h2d, 8, "P"),
                               line.format(*d2h, 4, "P[:1]"), line.format(*d2h, 12, "a"),
                               line.format(*d2h, 4, "G")], masked[backend]


USM_GLOBAL_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#pragma omp requires unified_shared_memory
int Counter = 1;
#pragma omp declare target(Counter)
int main(void) {
  int *Heap = (int *)malloc(sizeof(int));
  *Heap = 5;
#pragma omp target
  {
    Counter += 10;
    *Heap += Counter;
  }
  printf("Counter=%d Heap=%d\n", Counter, *Heap);
  return 0;
}
"""


def test_usm_declare_target_global_is_the_hosts(offload):
    """Under unified shared memory clang makes a declare target global a reference to the
    host's; the runtime writes the host address into it at load, as stock does, so the
    device updates the host variable (before: the reference stayed null, a crash)."""
    exe = offload.compile(USM_GLOBAL_PROGRAM, name="usm_global.c")
    for backend in ("host-upstream", "ours-host"):
        r = offload.run(exe, backend=backend)
        assert r.returncode == 0 and r.stdout == "Counter=11 Heap=16\n", (backend, r.stdout, r.stderr)


@pytest.mark.parametrize("backend", OURS)
def test_info_zero_prints_nothing(offload, copy_exe, backend):
    r = offload.run(copy_exe, backend=backend, env={"LIBOMPTARGET_INFO": "0"})
    assert r.returncode == 0 and info_lines(r.stderr) == [] and ompsim_lines(r.stderr) == [], r.stderr


@pytest.mark.parametrize("value,problem", [("abc", "not a whole number"),
                                           ("32abc", "not a whole number"),
                                           ("-2147483649", "out of range"),
                                           ("0x100000000", "out of range")])
def test_info_values_stock_misreads_are_refused(offload, copy_exe, value, problem):
    """Stock reads "32abc" as 32 and aborts on "abc" (std::stoi): ompsim names the value and
    keeps the default."""
    r = offload.run(copy_exe, backend="sim", env={"LIBOMPTARGET_INFO": value})
    assert r.returncode == 0 and "a[63]=126" in r.stdout, r.stderr
    assert info_lines(r.stderr) == []
    (line,) = ompsim_lines(r.stderr)
    assert line.startswith("ompsim: ignoring LIBOMPTARGET_INFO='%s': %s (expected a decimal integer" % (value, problem))


@pytest.mark.parametrize("backend", OURS)
def test_unhonoured_stock_variables_are_named_once(offload, copy_exe, backend):
    env = {"LIBOMPTARGET_STACK_SIZE": "65536", "LIBOMPTARGET_DEBUG": "1", "LIBOMPTARGET_MAP_FORCE_ATOMIC": "false",
           "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES": "2"}
    r = offload.run(copy_exe, backend=backend, env=env)
    assert r.returncode == 0 and "a[63]=126" in r.stdout, r.stderr
    assert ompsim_lines(r.stderr) == [
        "ompsim: ignoring LIBOMPTARGET_DEBUG, LIBOMPTARGET_STACK_SIZE, LIBOMPTARGET_MAP_FORCE_ATOMIC, "
        "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES: stock libomptarget variables ompsim does not honour "
        "(see docs/environment.md)"], r.stderr


@pytest.mark.parametrize("backend", OURS)
def test_stock_defaults_given_explicitly_are_silent(offload, copy_exe, backend):
    # Maps are always atomic in ompsim, stock's default; a profile granularity is honoured.
    r = offload.run(copy_exe, backend=backend, env={"LIBOMPTARGET_MAP_FORCE_ATOMIC": "TRUE",
                                                    "LIBOMPTARGET_PROFILE_GRANULARITY": "10"})
    assert r.returncode == 0 and ompsim_lines(r.stderr) == [], r.stderr


@pytest.mark.parametrize("backend", OURS)
@pytest.mark.parametrize("env", [{}, {"OMP_DEFAULT_DEVICE": "0"}, {"OMP_NUM_TEAMS": "1"},
                                 {"OMP_NUM_TEAMS": "2", "OMP_TEAMS_THREAD_LIMIT": "1"}],
                         ids=["none", "default-device", "num-teams-1", "num-teams-2-limit-1"])
def test_libomp_variables_act_as_on_stock(offload, backend, env):
    """OMP_DEFAULT_DEVICE, OMP_NUM_TEAMS and OMP_TEAMS_THREAD_LIMIT are libomp's: a host-image
    kernel (stock's host plugin, ours-host, sim) sees the same values as under stock."""
    exe = offload.compile(QUERY_PROGRAM, name="query.c")
    stock = offload.run(exe, backend="host-upstream", env=env)
    ours = offload.run(exe, backend=backend, env=env)
    assert stock.returncode == 0 and ours.returncode == 0, (stock.stderr, ours.stderr)
    assert ours.stdout == stock.stdout, (ours.stdout, stock.stdout)


@pytest.mark.parametrize("backend", OURS)
def test_default_device_selects_the_device(offload, backend):
    """OMP_DEFAULT_DEVICE picks the device of a target region without a device clause."""
    exe = offload.compile(r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int on = -1;
#pragma omp target map(from: on)
  on = 1;
  printf("default=%d of %d on=%d\n", omp_get_default_device(), omp_get_num_devices(), on);
  return on != 1;
}
""", name="defdev.c")
    r = offload.run(exe, backend=backend, env={"OMPSIM_NUM_DEVICES": "2", "OMP_DEFAULT_DEVICE": "1",
                                               "OMPSIM_TRACE": "launch"})
    assert r.returncode == 0 and r.stdout == "default=1 of 2 on=1\n", (r.stdout, r.stderr)
    launches = [l for l in r.stderr.splitlines() if l.startswith("[ompsim launch] launch ")]
    assert launches and all("device=1" in l for l in launches), r.stderr


STOCK_LIB = pathlib.Path("/usr/lib/llvm-22/lib/libomptarget.so.22.1")
DOC = pathlib.Path(__file__).parents[3] / "docs" / "environment.md"


def test_the_table_names_every_variable_stock_reads():
    """docs/environment.md has a row for each variable name in stock's library."""
    if not STOCK_LIB.exists():
        pytest.skip("stock libomptarget 22 is not installed (%s)" % STOCK_LIB)
    data = STOCK_LIB.read_bytes()
    names = {n.decode() for n in re.findall(rb"(?<![A-Za-z0-9_])((?:LIBOMPTARGET|OMPTARGET|OMPX|OMP|OFFLOAD)_[A-Z0-9_]+)\0",
                                            data)}
    assert {"LIBOMPTARGET_INFO", "LIBOMPTARGET_PROFILE", "LIBOMPTARGET_STACK_SIZE"} <= names
    rows = [l for l in DOC.read_text().splitlines() if l.startswith("| `")]
    missing = sorted(n for n in names
                     if not any("`%s`" % n in r or ("LIBOMPTARGET_AMDGPU_" in n and "`LIBOMPTARGET_AMDGPU_*`" in r
                                                    and "`%s`" % n[len("LIBOMPTARGET_AMDGPU_"):] in r)
                                for r in rows))
    assert missing == []
