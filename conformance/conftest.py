"""The conformance matrix: one pytest cell per (backend, translation, program).

Options: --backend (repeatable or comma list), --translate (pass, native; repeatable),
--program (name filter, repeatable), --conformance-out DIR (build cache and results).
"""
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts", "lib"))
sys.path.insert(0, HERE)

from harness import results  # noqa: E402
from harness.features import BACKENDS, TRANSLATIONS  # noqa: E402
from harness.header import discover  # noqa: E402
from harness.runner import Cell  # noqa: E402

PROGRAMS = os.path.join(HERE, "programs")
DEFAULT_OUT = os.path.join(HERE, "out")
#: The default columns: the simulated device both ways, and the stock reference.
DEFAULT_COLUMNS = [("sim", "pass"), ("sim", "native"), ("host-upstream", "native")]
#: Backends whose runtime is not ompsim's run only native builds unless --translate says otherwise.
NATIVE_ONLY = {"host-upstream", "cuda-upstream", "amdgpu-upstream"}


def _split(values):
    out = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def add_conformance_options(parser):
    """Registers the matrix options; called from the root conftest so they exist however pytest is run."""
    g = parser.getgroup("conformance", "ompsim conformance matrix")
    g.addoption("--backend", action="append", metavar="NAME",
                help="matrix backend(s): %s (repeatable or comma list)" % ", ".join(BACKENDS))
    g.addoption("--translate", action="append", metavar="MODE",
                help="translation(s): pass, native (repeatable or comma list)")
    g.addoption("--program", action="append", metavar="NAME",
                help="only programs whose name contains NAME (repeatable)")
    g.addoption("--conformance-out", default=DEFAULT_OUT, metavar="DIR",
                help="build cache and results folder (default conformance/out)")


def columns(config):
    """The (backend, translate) pairs this session runs, validated."""
    bks = _split(config.getoption("--backend"))
    trs = _split(config.getoption("--translate"))
    for b in bks:
        if b not in BACKENDS:
            raise pytest.UsageError("--backend %s: unknown (choose from %s)" % (b, ", ".join(BACKENDS)))
    for t in trs:
        if t not in TRANSLATIONS:
            raise pytest.UsageError("--translate %s: unknown (choose from pass, native)" % t)
    if not bks and not trs:
        return list(DEFAULT_COLUMNS)
    bks = bks or [b for b, _ in DEFAULT_COLUMNS]
    cols = []
    for b in dict.fromkeys(bks):
        for t in dict.fromkeys(trs or (["native"] if b in NATIVE_ONLY else list(TRANSLATIONS))):
            cols.append((b, t))
    return cols


def out_root(config):
    return os.path.abspath(config.getoption("--conformance-out"))


def session_id(config):
    """This pytest session's id: the controller makes it, xdist workers receive it.

    Records go to results/<session>/, so concurrent sessions sharing one out folder
    (a developer's run beside `scripts/test`) never mix or delete each other's records.
    """
    wi = getattr(config, "workerinput", None)
    if wi is not None and "conformance_session" in wi:
        return wi["conformance_session"]
    if not hasattr(config, "_conformance_session"):
        config._conformance_session = "%d-%d" % (os.getpid(), time.time_ns())
    return config._conformance_session


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["conformance_session"] = session_id(node.config)


def pytest_generate_tests(metafunc):
    if "cell" not in metafunc.fixturenames:
        return
    wanted = _split(metafunc.config.getoption("--program"))
    programs = [p for p in discover(PROGRAMS)
                if not wanted or any(w in os.path.basename(p) for w in wanted)]
    params = []
    for backend, translate in columns(metafunc.config):
        for p in programs:
            cell = Cell(p, backend, translate)
            params.append(pytest.param(cell, id=cell.id, marks=pytest.mark.e2e))
    metafunc.parametrize("cell", params)


@pytest.fixture
def conformance_out(request):
    return out_root(request.config)


@pytest.fixture
def conformance_session(request):
    return session_id(request.config)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput"):
        return
    root = out_root(config)
    sid = session_id(config)
    if os.path.isdir(results.session_dir(root, sid)):
        results.merge(root, sid, {"columns": [list(c) for c in columns(config)]})
