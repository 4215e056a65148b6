"""`ompsim matrix`: builds ompsim, runs the conformance matrix with pytest-xdist, and reports.

Writes results.json, junit.xml and report.html into conformance/out/ (or --out) and prints
the program × column table. Exits non-zero on any unexpected outcome (FAIL, XPASS,
UNRESOLVED, TIMEOUT, unexpected COMPILE-ERROR) or when pytest itself fails.

While it runs it shows progress: on a terminal one status line (cells done of total,
pass/fail/unexpected so far, elapsed and estimated time left, the slowest cell running)
and a line for each program with an unexpected outcome; piped, one line per finished
program with every cell's outcome. -q prints only the final table.

  ompsim matrix --suite DIR ...          run a lit / DejaGnu / plain suite instead of ompsim's programs
  ompsim matrix --shard K/N ...          run one deterministic slice of the cells (CI job matrices)
  ompsim matrix --repeat 200 ...         run each cell's program 200 times: a cell failing some runs is flaky
  ompsim matrix --tx ssh=host//python=python3 ...   spread the cells over other machines (pytest-xdist)
  ompsim matrix merge --out DIR A B ...  join shard results (folders or results.json files)
  ompsim matrix diff OLD.json NEW.json   cells whose outcome changed, regressions first (exit 1 on one)
"""
import argparse
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import threading

from ompsim_base import paths

BACKENDS = ("sim", "sim-ir", "sim-nvptx", "sim-amdgcn", "ours-host", "host-upstream", "cuda-upstream",
            "amdgpu-upstream",
            "gpu-build:sm_90", "gpu-build:gfx90a")


def register(sub):
    p = sub.add_parser("matrix", help="run the conformance matrix and write JSON/JUnit/HTML reports",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example: ompsim matrix --backend sim,ours-host --program indirect")
    p.add_argument("--backend", action="append", metavar="NAME",
                   help="backend(s), repeatable or comma list: %s (default: sim and host-upstream)" % ", ".join(BACKENDS))
    p.add_argument("--translate", action="append", metavar="MODE",
                   help="pass, native (default: both on ompsim's backends, native on stock ones)")
    p.add_argument("--program", action="append", metavar="NAME", help="only programs whose name contains NAME")
    p.add_argument("--out", metavar="DIR", help="report folder (default conformance/out; ./ompsim-matrix-out when installed)")
    p.add_argument("-j", "--jobs", default="auto", help="pytest-xdist workers (default auto)")
    p.add_argument("--no-build", action="store_true", help="do not run scripts/setup first")
    p.add_argument("--suite", action="append", metavar="DIR",
                   help="run the programs under DIR (lit, DejaGnu, plain or ompsim style; repeatable)")
    p.add_argument("--shard", metavar="K/N", help="run only the K-th of N deterministic slices of the cells")
    p.add_argument("--repeat", type=_positive, default=1, metavar="N",
                   help="build each cell once and run its program N times, every run even when all pass "
                        "(default 1). A cell that fails some runs only fails as flaky, naming the failed "
                        "runs and the first failure's reason, XFAIL or not; one failing every run is "
                        "reported as a single run would be. A run that times out ends the cell's repeats")
    p.add_argument("--expectations", metavar="FILE",
                   help="expectations file for every --suite instead of each suite's ompsim-expectations.txt "
                        "(for a suite folder you cannot write to)")
    p.add_argument("--tx", action="append", metavar="SPEC",
                   help="pytest-xdist gateway (repeatable), e.g. 4*popen, ssh=host//python=/usr/bin/python3"
                        "//chdir=/path/to/ompsim, socket=host:port; replaces -j")
    p.add_argument("--compare", metavar="OLD.json", help="show the changes since an earlier results.json in report.html")
    p.add_argument("--map-check", action="store_true",
                   help="run the sim column under the map checker and the virtual GPU's columns (sim-nvptx, "
                        "sim-amdgcn) under it and the GPU checks (OMPSIM_CHECK=1): a passing cell whose run prints "
                        "an 'ompsim: check:' line fails, and a GPU check's report fails the run "
                        "(docs/checker.md, docs/gpu-checks.md)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no set-up or progress output: only the final table and the report paths")
    p.set_defaults(func=main)
    sub_matrix = p.add_subparsers(dest="matrix_command", metavar="{diff,merge}")
    d = sub_matrix.add_parser("diff", help="cells whose outcome changed between two results.json (regressions first)",
                              epilog="example: ompsim matrix diff old/results.json conformance/out/results.json")
    d.add_argument("old", metavar="OLD.json")
    d.add_argument("new", metavar="NEW.json")
    d.add_argument("--html", metavar="FILE", help="also write NEW's report with the comparison to FILE")
    d.set_defaults(func=main_diff)
    m = sub_matrix.add_parser("merge", help="join shard results into one results.json, junit.xml and report.html",
                              epilog="example: ompsim matrix merge --out merged shard1/ shard2/ shard3/")
    m.add_argument("inputs", nargs="+", metavar="SHARD", help="a shard's report folder or its results.json")
    m.add_argument("--out", required=True, metavar="DIR", help="folder for the merged reports")
    m.set_defaults(func=main_merge)


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("expected a whole number N >= 1, not %r" % text)
    return value


def _harness():
    sys.path.insert(0, os.path.join(paths.ROOT, "conformance"))
    from harness import report  # noqa: E402 (the harness lives beside its programs)
    return report


def _load(report, path, what):
    try:
        return report.load(path)
    except (OSError, ValueError) as e:
        sys.stderr.write("ompsim: matrix %s: cannot read %s: %s\n" % (what, path, e))
        return None


def main_diff(args):
    report = _harness()
    old, new = _load(report, args.old, "diff"), _load(report, args.new, "diff")
    if old is None or new is None:
        return 2
    d = report.diff(old, new)
    sys.stdout.write(report.diff_text(d) + "\n")
    if args.html:
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(report.html_report(new, baseline=old, baseline_name=args.old))
        sys.stdout.write("report: %s\n" % args.html)
    return 1 if d["regressions"] else 0


def main_merge(args):
    report = _harness()
    docs, junits = [], []
    for item in args.inputs:
        path = os.path.join(item, "results.json") if os.path.isdir(item) else item
        doc = _load(report, path, "merge")
        if doc is None:
            return 2
        docs.append((path, doc))
        junit = os.path.join(os.path.dirname(path), "junit.xml")
        if os.path.exists(junit):
            junits.append(junit)
    try:
        merged = report.merge_docs(docs)
        junit_text = report.merge_junit(junits) if junits else None
    except report.MergeError as e:
        sys.stderr.write("ompsim: matrix merge: %s\n" % e)
        return 2
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(merged, f, indent=1, sort_keys=True)
    if junit_text is not None:
        with open(os.path.join(out, "junit.xml"), "w", encoding="utf-8") as f:
            f.write(junit_text)
    else:
        sys.stderr.write("ompsim: matrix merge: no junit.xml beside the inputs; none written\n")
    with open(os.path.join(out, "report.html"), "w", encoding="utf-8") as f:
        f.write(report.html_report(merged))
    sys.stdout.write(report.console_table(merged) + "\n")
    sys.stdout.write("merged %d shard(s) into %s\n" % (len(docs), out))
    return 1 if report.unexpected(merged) else 0


def main(args):
    report = _harness()
    baseline = None
    if args.compare:
        baseline = _load(report, args.compare, "--compare")
        if baseline is None:
            return 2

    # A missing folder or a bad expectations file: one line, before building or starting pytest.
    from harness import suites
    for d in args.suite or []:
        try:
            suites.discover(os.path.abspath(d))
            suites.expectations(os.path.abspath(d))
        except suites.SuiteError as e:
            sys.stderr.write("ompsim: matrix: --suite %s: %s\n" % (d, e))
            return 2

    out = os.path.abspath(args.out or paths.output_dir("ompsim-matrix-out")
                          or os.path.join(paths.ROOT, "conformance", "out"))
    os.makedirs(out, exist_ok=True)
    if not args.no_build:
        # No selfcheck: the matrix's own cells compile and run what it would, and more.
        paths.ensure_built(quiet=args.quiet, out=sys.stdout, selfcheck=False)
    from harness import build
    removed, freed = build.prune()
    if removed:
        sys.stdout.write("ompsim matrix: compile cache %s: removed the %d least recently used builds (%d MiB)\n"
                         % (build.cache_root(), removed, freed >> 20))
    results_json = os.path.join(out, "results.json")
    if os.path.exists(results_json):
        os.unlink(results_json)
    cmd = [sys.executable if "pytest" in sys.modules else "/usr/bin/python3", "-m", "pytest",
           os.path.join(paths.ROOT, "conformance", "test_matrix.py"), "-q", "-p", "no:cacheprovider",
           # --opt=value: xdist would rewrite a separate existing path for an rsynced host.
           "--conformance-out=" + out, "--junitxml=" + os.path.join(out, "junit.xml"),
           "-o", "junit_family=xunit2", "--tb=no", "-rN"]
    if args.tx:
        cmd += ["--dist", "load"]
        for spec in args.tx:
            cmd += ["--tx", spec]
        if any(not spec.split("*")[-1].startswith("popen") for spec in args.tx):
            # Other hosts get the harness, the CLI and the device headers `ompsim cc` puts in
            # device compiles (runtime/device/*/include), not the build: their OMPSIM_BUILD_DIR.
            cmd += ["--rsyncdir", os.path.join(paths.ROOT, "conformance"),
                    "--rsyncdir", os.path.join(paths.ROOT, "scripts"),
                    "--rsyncdir", os.path.join(paths.ROOT, "runtime"), "--rsyncignore", "out"]
    else:
        cmd += ["-n", str(args.jobs)]
    for opt, values in (("--backend", args.backend), ("--translate", args.translate), ("--program", args.program),
                        ("--suite", [os.path.abspath(d) for d in args.suite or []]),
                        ("--shard", [args.shard] if args.shard else []),
                        ("--repeat", [args.repeat] if args.repeat != 1 else []),
                        ("--expectations", [os.path.abspath(args.expectations)] if args.expectations else [])):
        for v in values or []:
            cmd.append("%s=%s" % (opt, v))
    if args.map_check:
        cmd.append("--map-check")
    env = dict(os.environ)
    env.setdefault("OMPSIM_BUILD_DIR", paths.BUILD)
    sys.stdout.write("ompsim matrix: %s\n" % " ".join(cmd))
    if not args.quiet:
        # Collecting a large suite takes a while before the first cell: say so at once.
        sys.stdout.write("ompsim matrix: collecting the programs of %s ...\n"
                         % (", ".join(os.path.abspath(d) for d in args.suite) if args.suite
                            else os.path.join(paths.ROOT, "conformance", "programs")))
    sys.stdout.flush()
    # SIGTERM (a CI job's timeout, `timeout`, a supervisor) ends the run as Ctrl-C does:
    # pytest is stopped with its workers and the programs they run, never left behind.
    # A closed stdout (`ompsim matrix | head`) does too: SIGPIPE is held off while
    # pytest runs (its own default is restored in pytest), so the write fails here
    # instead of killing this process alone.
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    previous_pipe = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        if args.quiet:
            output, returncode, interrupted = _run_quiet(cmd, env)
        else:
            output, returncode, interrupted = _run_with_progress(cmd, env)
    except BrokenPipeError:
        return 128 + signal.SIGPIPE
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGPIPE, previous_pipe)
    if not os.path.exists(results_json):
        sys.stdout.write(output)
        sys.stderr.write("ompsim: matrix: pytest wrote no results (%s)\n"
                         % ("interrupted" if interrupted else "exit %d" % returncode))
        return 130 if interrupted else returncode or 1
    doc = report.load(results_json)
    sys.stdout.write(report.console_table(doc) + "\n")
    compiles = [r.get("compile") for r in doc["records"]]
    if any(compiles):
        from ompsim_base import compile_server
        sys.stdout.write("compiles: %d cells compiled their program, %d found it in the compile cache (%s)%s\n"
                         % (compiles.count("made"), compiles.count("cached"), build.cache_root(),
                            "; LLVM's tools ran as forks of compile servers (docs/compile-server.md)"
                            if compiles.count("made") and compile_server.wanted() else ""))
    reruns = [r for r in doc["records"] if r.get("host_runtime_reruns")]
    if reruns:
        from harness import hostruntime
        sys.stdout.write("host runtime: a known defect of libomp ended %d runs of %d cells (a run it ends is made "
                         "again, up to %d more times): %s\n"
                         % (sum(r["host_runtime_reruns"] for r in reruns), len(reruns), hostruntime.RERUNS,
                            ", ".join("%s %s" % (r["program"], r["backend"]) for r in reruns[:5])
                            + (" and %d more" % (len(reruns) - 5) if len(reruns) > 5 else "")))
    if interrupted:
        sys.stdout.write("ompsim matrix: interrupted: the reports hold the %d cells that finished\n"
                         % len(doc["records"]))
    html_path = os.path.join(out, "report.html")
    with open(html_path, "w", encoding="utf-8") as f:
        f.write(report.html_report(doc, baseline=baseline, baseline_name=args.compare or ""))
    sys.stdout.write("reports: %s, %s, %s\n" % (results_json, os.path.join(out, "junit.xml"), html_path))
    if interrupted:
        return 130
    bad = report.unexpected(doc)
    if bad:
        return 1
    if returncode not in (0,):
        # Every cell met its expectation, yet pytest failed: show why (collection or usage error).
        sys.stdout.write(output[-3000:])
        return returncode
    return 0


def _terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt


def _run_quiet(cmd, env):
    """Runs pytest with its output kept for errors: (output, exit status, interrupted)."""
    proc = _start_pytest(cmd, env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate()
        return output, proc.returncode, False
    except KeyboardInterrupt:
        return _finish_interrupted(proc), proc.returncode, True


def _reader_gone(stream):
    """True when `stream` is a pipe whose reading end is closed (`ompsim matrix | head`)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poll = select.poll()
    poll.register(fd, select.POLLOUT)   # POLLERR is reported whatever is asked
    return any(events & select.POLLERR for _, events in poll.poll(0))


def _drain(stream, sink):
    for chunk in iter(lambda: stream.read(65536), ""):
        sink.append(chunk)
    stream.close()


def _read_events(fd, lines):
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            lines.put(line)
    lines.put(None)


def _run_with_progress(cmd, env):
    """Runs pytest and renders its progress events (conftest.py's --conformance-progress) as
    they come: (pytest's output, exit status, interrupted)."""
    sys.path.insert(0, os.path.join(paths.ROOT, "conformance"))
    from harness.progress import Progress  # noqa: E402 (beside report, imported by _harness)
    live = sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
    progress = Progress(sys.stdout, live, width=shutil.get_terminal_size((100, 24)).columns)
    read_fd, write_fd = os.pipe()
    try:
        proc = _start_pytest(cmd + ["--conformance-progress=%d" % write_fd], env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, pass_fds=(write_fd,))
    finally:
        os.close(write_fd)
    # Threads drain both pipes, so neither pytest's output nor its events can ever block it.
    output, events = [], queue.Queue()
    threads = [threading.Thread(target=_drain, args=(proc.stdout, output), daemon=True),
               threading.Thread(target=_read_events, args=(read_fd, events), daemon=True)]
    for t in threads:
        t.start()
    interrupted = False
    try:
        while True:
            try:
                line = events.get(timeout=0.5)
            except queue.Empty:
                if _reader_gone(sys.stdout):
                    raise BrokenPipeError   # at once, not at the next finished cell
                progress.draw()         # the clock moves on between events
                continue
            if line is None:
                break
            progress.feed_line(line)
        proc.wait()
    except (KeyboardInterrupt, BrokenPipeError) as e:
        # A closed stdout (`ompsim matrix | head`) stops the run as Ctrl-C does.
        interrupted = True
        if isinstance(e, KeyboardInterrupt):
            progress.close()
        _finish_interrupted(proc, read=False)
        if isinstance(e, BrokenPipeError):
            raise
    progress.close()
    for t in threads:
        t.join(timeout=30)
    return "".join(output), proc.returncode, interrupted


def _start_pytest(cmd, env, **popen_args):
    """pytest in a process group of its own with SIGINT at its default: an interrupted run
    (Ctrl-C, which reaches this process's group alone; SIGTERM; a closed stdout) passes
    one SIGINT to that whole group (_finish_interrupted), as a terminal's Ctrl-C would.
    Sent to pytest's main process alone, it left each xdist worker running its cell's
    program to the cell's timeout (a minute) before pytest could end. A job that a
    non-interactive shell starts in the background inherits SIGINT ignored: pytest would
    then never see it. (Killed outright, this process takes pytest's pipes with it: pytest
    ends at its next write.)"""
    def own_group():
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    return subprocess.Popen(cmd, cwd=paths.ROOT, env=env, preexec_fn=own_group, **popen_args)


def _signal_group(proc, signum):
    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        pass


def _finish_interrupted(proc, grace=60, read=True):
    """Lets an interrupted pytest write its partial results, then makes sure it is gone:
    its workers stop too, killing the programs they run (each in a session of its own).
    Returns its output unless `read` is false (a thread reads it)."""
    _signal_group(proc, signal.SIGINT)
    try:
        if read:
            return proc.communicate(timeout=grace)[0] or ""
        proc.wait(timeout=grace)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        _signal_group(proc, signal.SIGKILL)
        if read:
            return proc.communicate()[0] or ""
        proc.wait()
    return ""
