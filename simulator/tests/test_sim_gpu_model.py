"""The GPU execution model on the simulated device: a launch's num_teams and thread_limit are
honoured (a team gets the threads the kernel asks for, not the host's CPU count), one launch's
clauses do not carry over to the next, and LIBOMPTARGET_INFO=16 prints the launch line stock's
GPU plugins print."""
import os
import re

import pytest

pytestmark = pytest.mark.e2e

TEAMS = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
  int threads[3] = {0}, teams = 0, limit = 0;
#pragma omp target teams num_teams(3) thread_limit(5) map(tofrom : threads, teams, limit)
  {
    if (omp_get_team_num() == 0) {
      teams = omp_get_num_teams();
      limit = omp_get_thread_limit();
    }
#pragma omp parallel
    if (omp_get_thread_num() == 0)
      threads[omp_get_team_num()] = omp_get_num_threads();
  }
  printf("clauses: teams=%d limit=%d threads=%d %d %d\n", teams, limit, threads[0], threads[1], threads[2]);
  int parallel = 0;
#pragma omp target parallel num_threads(7) map(tofrom : parallel)
  if (omp_get_thread_num() == 0)
    parallel = omp_get_num_threads();
  printf("target parallel num_threads(7): %d\n", parallel);
  int plain_teams = 0, plain_threads = 0;
#pragma omp target teams map(tofrom : plain_teams, plain_threads)
  {
#pragma omp parallel
    if (omp_get_team_num() == 0 && omp_get_thread_num() == 0) {
      plain_teams = omp_get_num_teams();
      plain_threads = omp_get_num_threads();
    }
  }
  printf("no clauses: teams=%d threads=%d\n", plain_teams, plain_threads);
  return 0;
}
"""

LAUNCH_LINE = re.compile(r'"PluginInterface" device 0 info: Launching kernel __omp_offloading_\w+_main_l(\d+) '
                         r'with \[(\d+),1,1\] blocks and \[(\d+),1,1\] threads in Generic mode')


def cpus():
    return len(os.sched_getaffinity(0))


def test_thread_limit_gives_each_team_its_threads(offload):
    exe = offload.compile(TEAMS, name="teams.c", translate="pass")
    r = offload.run(exe, backend="sim")
    assert r.returncode == 0, r.stderr
    # The host has cpus() processors; the device still runs 5 threads per team, as a GPU would.
    assert r.stdout.splitlines() == [
        "clauses: teams=3 limit=5 threads=5 5 5",
        "target parallel num_threads(7): 7",
        # libomp's defaults again: 1 team, the CPUs (no clause of an earlier launch carries over).
        "no clauses: teams=1 threads=%d" % cpus(),
    ], (r.stdout, r.stderr)


def test_launch_lines_are_stocks_gpu_plugin_lines(offload):
    exe = offload.compile(TEAMS, name="teams.c", translate="pass")
    r = offload.run(exe, backend="sim", env={"LIBOMPTARGET_INFO": "16"})
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if "PluginInterface" in l]
    shapes = [LAUNCH_LINE.fullmatch(l) for l in lines]
    assert all(shapes), lines
    assert [(int(m.group(2)), int(m.group(3))) for m in shapes] == [(3, 5), (1, 7), (1, cpus())], lines


def test_launch_lines_follow_omp_num_teams_and_teams_thread_limit(offload):
    exe = offload.compile(TEAMS, name="teams.c", translate="pass")
    r = offload.run(exe, backend="sim", env={"LIBOMPTARGET_INFO": "16", "OMP_NUM_TEAMS": "2",
                                             "OMP_TEAMS_THREAD_LIMIT": "1"})
    assert r.returncode == 0, r.stderr
    shapes = [LAUNCH_LINE.fullmatch(l) for l in r.stderr.splitlines() if "PluginInterface" in l]
    # target parallel is one team by construction (clang passes num_teams 1).
    assert [(int(m.group(2)), int(m.group(3))) for m in shapes] == [(3, 5), (1, 7), (2, 1)], r.stderr
    assert r.stdout.splitlines()[-1] == "no clauses: teams=2 threads=1", r.stdout


def test_no_launch_line_without_the_bit(offload):
    exe = offload.compile(TEAMS, name="teams.c", translate="pass")
    r = offload.run(exe, backend="sim", env={"LIBOMPTARGET_INFO": "32"})
    assert r.returncode == 0 and "PluginInterface" not in r.stderr, r.stderr


def test_thread_budget_is_shared_by_a_launchs_teams(offload):
    """OMPSIM_DEVICE_THREADS=8: 3 teams asking for 5 threads each get 8/3 = 2 each; one team
    (target parallel) gets its 7."""
    exe = offload.compile(TEAMS, name="teams.c", translate="pass")
    r = offload.run(exe, backend="sim", env={"LIBOMPTARGET_INFO": "16", "OMPSIM_DEVICE_THREADS": "8"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["clauses: teams=3 limit=5 threads=2 2 2",
                                         "target parallel num_threads(7): 7"], r.stdout
    shapes = [LAUNCH_LINE.fullmatch(l) for l in r.stderr.splitlines() if "PluginInterface" in l]
    assert [(int(m.group(2)), int(m.group(3))) for m in shapes][:2] == [(3, 2), (1, 7)], r.stderr
