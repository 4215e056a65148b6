"""The conformance matrix: one pytest cell per (backend, translation, program).

Options: --backend (repeatable or comma list), --translate (pass, native; repeatable),
--program (name filter, repeatable), --suite DIR (user suites instead of ompsim's own
programs; repeatable), --shard K/N, --repeat N (build once, run each program N times:
a cell that fails some runs only is flaky), --conformance-out DIR (build cache and results).

Each cell's record travels back to the controller on its test report, so workers on
other hosts (pytest-xdist `--tx ssh=...`, `--tx socket=...`) need no shared folder for
results; the controller writes results.json.
"""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts", "lib"))
sys.path.insert(0, HERE)

from harness import results, suites  # noqa: E402
from harness.features import ALL_BACKENDS, GPU_BUILD_BACKENDS, TRANSLATIONS  # noqa: E402
from harness.header import discover  # noqa: E402
from harness.runner import Cell  # noqa: E402

PROGRAMS = os.path.join(HERE, "programs")
DEFAULT_OUT = os.path.join(HERE, "out")
#: The default columns: the simulated device both ways, running host-offload code and each
#: GPU's code, and the stock reference. The answer a new user wants first comes first: the
#: simulated device translating (host-offload code, then NVIDIA's), beside stock.
DEFAULT_COLUMNS = [("sim", "pass"), ("sim-nvptx", "pass"), ("host-upstream", "native"), ("sim", "native"),
                   ("sim-nvptx", "native"), ("sim-amdgcn", "pass"), ("sim-amdgcn", "native")]
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
                help="matrix backend(s): %s (repeatable or comma list)" % ", ".join(ALL_BACKENDS))
    g.addoption("--translate", action="append", metavar="MODE",
                help="translation(s): pass, native (repeatable or comma list)")
    g.addoption("--program", action="append", metavar="NAME",
                help="only programs whose name contains NAME (repeatable)")
    g.addoption("--suite", action="append", metavar="DIR",
                help="run the programs under DIR (lit, DejaGnu, plain or ompsim-header style; repeatable) "
                     "instead of ompsim's own")
    g.addoption("--shard", metavar="K/N", help="run only the K-th of N deterministic slices of the cells")
    g.addoption("--expectations", metavar="FILE",
                help="expectations file for every --suite, instead of each suite's ompsim-expectations.txt")
    g.addoption("--map-check", action="store_true",
                help="run the sim column under the map checker and the virtual GPU's columns (sim-nvptx, "
                     "sim-amdgcn) under it and the GPU checks (OMPSIM_CHECK=1): a passing cell whose run prints "
                     "an 'ompsim: check:' line fails, and a GPU check's report fails the run "
                     "(docs/checker.md, docs/gpu-checks.md)")
    g.addoption("--repeat", default=1, type=int, metavar="N",
                help="build each cell once and run its program N times (default 1); a cell that fails some "
                     "runs only fails as flaky, naming the runs; a run that times out ends the repeats")
    g.addoption("--conformance-out", default=DEFAULT_OUT, metavar="DIR",
                help="build cache and results folder (default conformance/out)")
    g.addoption("--conformance-progress", metavar="FD", type=int,
                help="write progress events (JSON lines: collected, start, done) to this open file "
                     "descriptor; `ompsim matrix` renders them (harness/progress.py)")


def pytest_addoption(parser):
    # Run from the checkout, the root conftest has registered these already. A worker on
    # another host (xdist --tx with --rsyncdir) has only conformance/: register them here.
    try:
        add_conformance_options(parser)
    except ValueError:
        pass


def columns(config):
    """The (backend, translate) pairs this session runs, validated."""
    bks = _split(config.getoption("--backend"))
    trs = _split(config.getoption("--translate"))
    for b in bks:
        if b not in ALL_BACKENDS:
            raise pytest.UsageError("--backend %s: unknown (choose from %s)" % (b, ", ".join(ALL_BACKENDS)))
    for t in trs:
        if t not in TRANSLATIONS:
            raise pytest.UsageError("--translate %s: unknown (choose from pass, native)" % t)
    if not bks and not trs:
        return list(DEFAULT_COLUMNS)
    bks = bks or [b for b, _ in DEFAULT_COLUMNS]
    cols = []
    for b in dict.fromkeys(bks):
        default = ["native"] if b in NATIVE_ONLY else ["pass"] if b in GPU_BUILD_BACKENDS else list(TRANSLATIONS)
        for t in dict.fromkeys(trs or default):
            cols.append((b, t))
    return cols


def out_root(config):
    return os.path.abspath(config.getoption("--conformance-out"))


def expectations_file(config):
    """--expectations FILE (absolute), or None: each suite's own file."""
    value = config.getoption("--expectations")
    if value and not _split(config.getoption("--suite")):
        raise pytest.UsageError("--expectations %s: applies to --suite runs only" % value)
    return os.path.abspath(value) if value else None


def suite_roots(config):
    """The --suite folders, checked: each exists, names are distinct, expectations parse."""
    roots, labels = [], {}
    for d in _split(config.getoption("--suite")):
        root = os.path.abspath(d)
        label = os.path.basename(os.path.normpath(root))
        if label in labels and labels[label] != root:
            raise pytest.UsageError("--suite %s: another suite is also named %r (%s); rename one folder"
                                    % (d, label, labels[label]))
        labels[label] = root
        try:
            suites.discover(root)
            suites.expectations(root, expectations_file(config))
        except suites.SuiteError as e:
            raise pytest.UsageError("--suite %s: %s" % (d, e)) from None
        roots.append(root)
    return list(dict.fromkeys(roots))


def shard(config):
    """(K, N) from --shard K/N, or None."""
    value = config.getoption("--shard")
    if not value:
        return None
    k, sep, n = value.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise pytest.UsageError("--shard %s: expected K/N with 1 <= K <= N" % value)
    return int(k), int(n)


def repeat(config):
    """N from --repeat N (1: each program runs once)."""
    value = config.getoption("--repeat")
    if value < 1:
        raise pytest.UsageError("--repeat %d: expected N >= 1" % value)
    return value


def programs(config):
    """[(path, suite root or None)] the session runs, after --program."""
    wanted = _split(config.getoption("--program"))
    roots = suite_roots(config)
    if roots:
        found = [(p, r) for r in roots for p in suites.discover(r)]
    else:
        found = [(p, None) for p in discover(PROGRAMS)]
    return [(p, r) for p, r in found
            if not wanted or any(w in (suites.program_name(r, p) if r else os.path.basename(p)) for w in wanted)]


def pytest_generate_tests(metafunc):
    if "cell" not in metafunc.fixturenames:
        return
    params = []
    cols = columns(metafunc.config)
    # Program by program (each with all its columns), so programs finish one after another
    # while the run goes on: the progress shows finished programs early, not all at the end.
    both_sim_gpus = {t for _, t in cols if ("sim-nvptx", t) in cols and ("sim-amdgcn", t) in cols}
    for p, root in programs(metafunc.config):
        for backend, translate in cols:
            cell = Cell(p, backend, translate, root, expectations_file(metafunc.config) if root else None,
                        map_check=bool(metafunc.config.getoption("--map-check")), repeat=repeat(metafunc.config),
                        both_sim_gpus=translate in both_sim_gpus)
            params.append(pytest.param(cell, id=cell.id, marks=pytest.mark.e2e))
    metafunc.parametrize("cell", params)


def pytest_collection_modifyitems(config, items):
    """--shard K/N: keeps every N-th cell (from the K-th) of the cells sorted by id, so
    the N shards are disjoint, cover the matrix, and do not depend on the machine."""
    which = shard(config)
    if not which:
        return
    k, n = which
    cells = sorted(item.callspec.id for item in items if hasattr(item, "callspec") and "cell" in item.callspec.params)
    keep = {cid for i, cid in enumerate(cells) if i % n == k - 1}
    selected, deselected = [], []
    for item in items:
        if hasattr(item, "callspec") and "cell" in item.callspec.params and item.callspec.id not in keep:
            deselected.append(item)
        else:
            selected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


@pytest.fixture
def conformance_out(request):
    return out_root(request.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    record = getattr(item, "conformance_record", None)
    if record is not None and call.when == "call":
        # Serialised with the report, so it reaches the controller from any xdist gateway.
        outcome.get_result().conformance_record = record


#: This process's pytest config (the hooks below are not handed it).
_SESSION = {}


class ProgressEvents:
    """The controller's side of --conformance-progress: one JSON object a line to FD."""

    def __init__(self, fd):
        self.fd = fd
        os.set_inheritable(fd, False)   # workers and the programs they run never hold it open
        self.names = {}                 # cell id -> (program, column)
        self.outcomes = {}              # node id -> (outcome, expected)
        self.finished = set()
        self.collected = False

    def emit(self, **event):
        if self.fd is None:
            return
        data = (json.dumps(event, separators=(",", ":")) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.fd, data):]
        except OSError:
            self.fd = None              # the reader has gone (ompsim matrix interrupted): run on silently

    @staticmethod
    def cell_id(nodeid):
        _, sep, rest = nodeid.partition("[")
        return rest[:-1] if sep and rest.endswith("]") else nodeid

    def send_collected(self, config, ids):
        if self.collected:
            return
        self.collected = True
        if not self.names:
            for backend, translate in columns(config):
                for p, root in programs(config):
                    cell = Cell(p, backend, translate, root)
                    self.names[cell.id] = (cell.name, "%s/%s" % (backend, translate))
        cells = []
        for nodeid in ids:
            cid = self.cell_id(nodeid)
            if "test_program" in nodeid:
                cells.append([cid, *self.names.get(cid, (cid, "?"))])
        self.emit(event="collected", cells=cells)

    def report(self, report):
        record = getattr(report, "conformance_record", None)
        if record is not None:
            self.outcomes[report.nodeid] = (record["outcome"], record["expected"], record.get("compile"))
        elif report.failed and report.nodeid not in self.outcomes:
            # setup failed, or xdist reports a worker that crashed in the cell
            self.outcomes[report.nodeid] = ("UNRESOLVED", False, None)
        if report.when not in ("setup", "call"):
            self.finish(report.nodeid)

    def finish(self, nodeid):
        if nodeid in self.finished or "test_program" not in nodeid:
            return
        self.finished.add(nodeid)
        outcome, expected, compile_ = self.outcomes.pop(nodeid, ("UNRESOLVED", False, None))
        self.emit(event="done", id=self.cell_id(nodeid), outcome=outcome, expected=expected, compile=compile_)


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: compiles and runs real programs with clang-22")
    if not hasattr(config, "workerinput"):
        # Bad options stop the session here with one line, before any worker starts.
        columns(config)
        expectations_file(config)
        suite_roots(config)
        shard(config)
        repeat(config)
    _SESSION["config"] = config
    _SESSION["records"] = []
    fd = config.getoption("--conformance-progress", None)
    _SESSION["progress"] = ProgressEvents(fd) if fd is not None and not hasattr(config, "workerinput") else None


def pytest_collection_finish(session):
    # Without xdist this process collects (with xdist the workers do; see below).
    progress = _SESSION.get("progress")
    if progress:
        progress.send_collected(session.config, [item.nodeid for item in session.items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    progress = _SESSION.get("progress")
    if progress:
        progress.send_collected(node.config, ids)


def pytest_runtest_logstart(nodeid, location):
    progress = _SESSION.get("progress")
    if progress and "test_program" in nodeid:
        progress.emit(event="start", id=progress.cell_id(nodeid))


def pytest_runtest_logfinish(nodeid, location):
    progress = _SESSION.get("progress")
    if progress:
        progress.finish(nodeid)


def pytest_runtest_logreport(report):
    record = getattr(report, "conformance_record", None)
    config = _SESSION.get("config")
    if record is not None and config is not None and not hasattr(config, "workerinput"):
        _SESSION["records"].append(record)
    progress = _SESSION.get("progress")
    if progress:
        progress.report(report)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput"):
        return
    records = _SESSION.get("records")
    if not records:
        return
    which = shard(config)
    results.write(out_root(config), records, {
        "columns": [list(c) for c in columns(config)], "suites": suite_roots(config),
        "shard": "%d/%d" % which if which else None})
