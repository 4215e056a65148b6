"""Device numbering as stock libomptarget 22: the host is a valid device()
argument (also under OMP_TARGET_OFFLOAD=mandatory), ours-host has the stock
host plugin's device count, OMPSIM_NUM_DEVICES applies to every plugin."""
import re

import pytest

from mapping_helpers import check_ok, run

pytestmark = pytest.mark.e2e


def devices(out):
    return int(re.search(r"num_devices=(\d+)", out).group(1))


def test_ours_host_numbers_devices_like_stock(built):
    exe = built("device_numbering.c")
    stock = run(exe, "host-upstream")
    check_ok(stock, "host-upstream")
    ours = run(exe, "ours-host")
    check_ok(ours, "ours-host")
    assert ours.stdout == stock.stdout
    assert devices(stock.stdout) >= 2


def test_sim_with_as_many_devices_prints_what_stock_prints(built):
    exe = built("device_numbering.c")
    stock = run(exe, "host-upstream")
    check_ok(stock, "host-upstream")
    sim = run(exe, "sim", env={"OMPSIM_NUM_DEVICES": str(devices(stock.stdout))})
    check_ok(sim, "sim")
    assert sim.stdout == stock.stdout


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_initial_device_runs_on_the_host_when_offload_is_mandatory(built, backend):
    r = run(built("device_numbering.c"), backend, env={"OMP_TARGET_OFFLOAD": "MANDATORY"})
    check_ok(r, backend)
    assert "initial device: on_host=1 x=1" in r.stdout
    assert "num_devices device: on_host=1 x=2" in r.stdout
    assert "data constructs on the host: x=7" in r.stdout


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_ompsim_num_devices_applies_to_every_plugin(built, backend):
    r = run(built("device_numbering.c"), backend, env={"OMPSIM_NUM_DEVICES": "3"})
    check_ok(r, backend)
    assert devices(r.stdout) == 3
    for d in range(3):
        assert "device %d: g=%d" % (d, 100 + d) in r.stdout
