"""`ompsim matrix`: builds ompsim, runs the conformance matrix with pytest-xdist, and reports.

Writes results.json, junit.xml and report.html into conformance/out/ (or --out) and prints
the program × column table. Exits non-zero on any unexpected outcome (FAIL, XPASS,
UNRESOLVED, TIMEOUT, unexpected COMPILE-ERROR) or when pytest itself fails.
"""
import os
import subprocess
import sys

from . import paths

BACKENDS = ("sim", "sim-ir", "ours-host", "host-upstream", "cuda-upstream", "amdgpu-upstream")


def register(sub):
    p = sub.add_parser("matrix", help="run the conformance matrix and write JSON/JUnit/HTML reports",
                       description=__doc__,
                       epilog="example: ompsim matrix --backend sim,ours-host --program indirect")
    p.add_argument("--backend", action="append", metavar="NAME",
                   help="backend(s), repeatable or comma list: %s (default: sim and host-upstream)" % ", ".join(BACKENDS))
    p.add_argument("--translate", action="append", metavar="MODE",
                   help="pass, native (default: both on ompsim's backends, native on stock ones)")
    p.add_argument("--program", action="append", metavar="NAME", help="only programs whose name contains NAME")
    p.add_argument("--out", metavar="DIR", help="report folder (default conformance/out; ./ompsim-matrix-out when installed)")
    p.add_argument("-j", "--jobs", default="auto", help="pytest-xdist workers (default auto)")
    p.add_argument("--no-build", action="store_true", help="do not run scripts/setup first")
    p.set_defaults(func=main)


def main(args):
    sys.path.insert(0, os.path.join(paths.ROOT, "conformance"))
    from harness import report  # noqa: E402 (the harness lives beside its programs)

    out = os.path.abspath(args.out or paths.output_dir("ompsim-matrix-out")
                          or os.path.join(paths.ROOT, "conformance", "out"))
    os.makedirs(out, exist_ok=True)
    if not args.no_build:
        paths.ensure_built()
    results_json = os.path.join(out, "results.json")
    if os.path.exists(results_json):
        os.unlink(results_json)
    cmd = [sys.executable if "pytest" in sys.modules else "/usr/bin/python3", "-m", "pytest",
           os.path.join(paths.ROOT, "conformance", "test_matrix.py"), "-q", "-p", "no:cacheprovider",
           "-n", str(args.jobs), "--conformance-out", out, "--junitxml", os.path.join(out, "junit.xml"),
           "-o", "junit_family=xunit2", "--tb=no", "-rN"]
    for opt, values in (("--backend", args.backend), ("--translate", args.translate), ("--program", args.program)):
        for v in values or []:
            cmd += [opt, v]
    env = dict(os.environ)
    env.setdefault("OMPSIM_BUILD_DIR", paths.BUILD)
    sys.stdout.write("ompsim matrix: %s\n" % " ".join(cmd))
    sys.stdout.flush()
    r = subprocess.run(cmd, cwd=paths.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not os.path.exists(results_json):
        sys.stdout.write(r.stdout)
        sys.stderr.write("ompsim: matrix: pytest wrote no results (exit %d)\n" % r.returncode)
        return r.returncode or 1
    doc = report.load(results_json)
    sys.stdout.write(report.console_table(doc) + "\n")
    html_path = os.path.join(out, "report.html")
    with open(html_path, "w", encoding="utf-8") as f:
        f.write(report.html_report(doc))
    sys.stdout.write("reports: %s, %s, %s\n" % (results_json, os.path.join(out, "junit.xml"), html_path))
    bad = report.unexpected(doc)
    if bad:
        return 1
    if r.returncode not in (0,):
        # Every cell met its expectation, yet pytest failed: show why (collection or usage error).
        sys.stdout.write(r.stdout[-3000:])
        return r.returncode
    return 0
