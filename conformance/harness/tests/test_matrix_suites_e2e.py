"""End-to-end tests of user suites in the matrix: the fixture suites on a real column, checks
that can fail, shards joined by `ompsim matrix merge`, xdist gateways (popen and socket),
and the compile-only GPU columns. Each run is kept to a handful of cells."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from harness import outcome as oc
from harness.runner import Cell, run_cell

pytestmark = pytest.mark.e2e

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FIXTURES = os.path.join(ROOT, "conformance", "suites")
OMPSIM = os.path.join(ROOT, "scripts", "ompsim")
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))
from ompsim_base import paths  # noqa: E402

#: A cheap column every machine with the build has: ompsim's runtime, in process.
COLUMN = ["--backend", "ours-host", "--translate", "pass"]


def need_build():
    if not os.path.exists(paths.PASS_PLUGIN) or not os.path.exists(paths.RUNTIME):
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)


def pytest_run(out, *args, timeout=900):
    """Runs the matrix through pytest into `out`; returns (CompletedProcess, results document)."""
    cmd = ["/usr/bin/python3", "-m", "pytest", os.path.join(ROOT, "conformance", "test_matrix.py"), "-q",
           "-p", "no:cacheprovider", "--conformance-out=%s" % out, "--junitxml=%s" % os.path.join(str(out), "junit.xml"),
           "-o", "junit_family=xunit2", *args]
    r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    path = os.path.join(str(out), "results.json")
    doc = json.load(open(path)) if os.path.exists(path) else None
    return r, doc


def outcomes(doc):
    return {(r["program"], r["backend"], r["translate"]): (r["outcome"], r["expected"]) for r in doc["records"]}


def test_fixture_suites_meet_their_expectations(tmp_path):
    need_build()
    r, doc = pytest_run(tmp_path, *COLUMN, "-p", "no:xdist",
                        *sum((["--suite", os.path.join(FIXTURES, s)] for s in ("lit", "dejagnu", "plain")), []))
    assert doc, r.stdout
    got = {k[0]: v for k, v in outcomes(doc).items()}
    assert got == {
        "lit/check_next_not.c": ("PASS", True),
        "lit/shared_lib.c": ("PASS", True),                  # multi-file: library built first
        "lit/run_fail.c": ("PASS", True),
        "lit/requires_libc.c": ("UNSUPPORTED", True),
        "lit/known_mismatch.c": ("XFAIL", True),             # from ompsim-expectations.txt
        "dejagnu/output_shouldfail.c": ("PASS", True),
        "dejagnu/additional_sources.c": ("PASS", True),       # multi-file: dg-additional-sources
        "dejagnu/compile_nonshared.c": ("UNSUPPORTED", True),  # shared address space here
        "plain/indirect_scalar.c": ("PASS", True),
        "plain/exits_one.c": ("XFAIL", True),
    }, r.stdout
    assert r.returncode == 0, r.stdout
    # run_s is the program's run alone: part of the cell's time where the program ran, absent where it did not.
    for rec in doc["records"]:
        if rec["outcome"] == "UNSUPPORTED":
            assert rec["run_s"] is None, rec
        else:
            assert 0 < rec["run_s"] < rec["duration"], rec


def test_failing_checks_fail_the_cell(tmp_path):
    """CHECK-NEXT, CHECK-NOT and dg-output mismatches, and a missing dg-shouldfail failure."""
    need_build()
    suite = tmp_path / "neg"
    suite.mkdir()
    body = '#include <stdio.h>\nint main(void) {\n  int x = 0;\n#pragma omp target map(tofrom : x)\n  x = 1;\n' \
           '  printf("a\\nb\\nc %d\\n", x);\n  return 0;\n}\n'
    (suite / "next.c").write_text("// RUN: %libomptarget-compile-run-and-check-generic\n" + body +
                                  "// CHECK: a\n// CHECK-NEXT: c 1\n")
    (suite / "not.c").write_text("// RUN: %libomptarget-compile-run-and-check-generic\n" + body +
                                 "// CHECK: a\n// CHECK-NOT: b\n// CHECK: c 1\n")
    (suite / "dgout.c").write_text('/* { dg-do run } */\n/* { dg-output "c 2" } */\n' + body)
    (suite / "dgfail.c").write_text('/* { dg-do run } */\n/* { dg-shouldfail "must fail" } */\n' + body)
    work = tmp_path / "w"
    for name, needle in (("next.c", "CHECK-NEXT"), ("not.c", "CHECK-NOT"), ("dgout.c", "dg-output"),
                         ("dgfail.c", "dg-shouldfail")):
        work.mkdir(exist_ok=True)
        res, record = run_cell(Cell(str(suite / name), "ours-host", "pass", str(suite)), str(tmp_path / "out"), str(work))
        assert res.code == oc.FAIL and not res.expected, (name, res)
        assert needle in res.reason, (name, res.reason)
        shutil.rmtree(work)


def test_merged_shards_equal_the_unsharded_run(tmp_path):
    need_build()
    suites = ["--suite", os.path.join(FIXTURES, "plain"), "--suite", os.path.join(FIXTURES, "dejagnu")]
    r, whole = pytest_run(tmp_path / "whole", *COLUMN, *suites, "-p", "no:xdist")
    assert whole, r.stdout
    shards = []
    for k in (1, 2, 3):
        r, doc = pytest_run(tmp_path / ("s%d" % k), *COLUMN, *suites, "-p", "no:xdist", "--shard", "%d/3" % k)
        assert doc and doc["shard"] == "%d/3" % k, r.stdout
        shards.append(doc)
    sizes = [len(d["records"]) for d in shards]
    assert sum(sizes) == len(whole["records"]) == 5 and all(sizes), sizes
    m = subprocess.run([OMPSIM, "matrix", "merge", "--out", str(tmp_path / "merged"),
                        *[str(tmp_path / ("s%d" % k)) for k in (1, 2, 3)]],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert m.returncode == 0, m.stdout
    merged = json.load(open(tmp_path / "merged" / "results.json"))
    assert outcomes(merged) == outcomes(whole)

    def cases(path):
        text = open(path).read()
        return sorted(re.findall(r'<testcase [^>]*name="([^"]+)"', text))
    assert cases(tmp_path / "merged" / "junit.xml") == cases(tmp_path / "whole" / "junit.xml")
    assert "<table" in open(tmp_path / "merged" / "report.html").read()
    again = subprocess.run([OMPSIM, "matrix", "merge", "--out", str(tmp_path / "m2"), str(tmp_path / "s1"),
                            str(tmp_path / "s1")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert again.returncode == 2 and "is in both" in again.stdout


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cells_spread_over_popen_and_socket_gateways(tmp_path):
    """Two popen gateways and one socket gateway (execnet's socketserver, started here, as
    on a remote host): xdist rsyncs conformance/, scripts/ and runtime/ (the device headers) into the socket worker's
    folder, every cell's record comes back to the controller, every gateway runs cells."""
    need_build()
    import execnet
    server_script = os.path.join(os.path.dirname(execnet.__file__), "script", "socketserver.py")
    port = _free_port()
    remote = tmp_path / "remote"
    remote.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "OMPSIM_BUILD_DIR"}
    server = subprocess.Popen(["/usr/bin/python3", "-u", server_script, "127.0.0.1:%d" % port], cwd=str(remote),
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        line = server.stdout.readline()
        assert "Entering Accept loop" in line, line
        r, doc = pytest_run(tmp_path / "out", *COLUMN, "--suite", os.path.join(FIXTURES, "plain"),
                            "--suite", os.path.join(FIXTURES, "dejagnu"), "--dist", "load",
                            "--tx", "2*popen", "--tx", "socket=127.0.0.1:%d//chdir=%s//env:OMPSIM_BUILD_DIR=%s" % (port, remote / "work", paths.BUILD),
                            "--rsyncdir", os.path.join(ROOT, "conformance"), "--rsyncdir", os.path.join(ROOT, "scripts"),
                            "--rsyncdir", os.path.join(ROOT, "runtime"), "--rsyncignore", "out")
    finally:
        server.kill()
        server.wait()
    assert doc, r.stdout
    assert len(doc["records"]) == 5, r.stdout
    assert {w["worker"] for w in doc["records"]} == {"gw0", "gw1", "gw2"}, r.stdout
    assert (remote / "work" / "conformance" / "test_matrix.py").exists()   # it ran from its own copy
    assert {k[0]: v[0] for k, v in outcomes(doc).items()} == {
        "plain/indirect_scalar.c": "PASS", "plain/exits_one.c": "XFAIL", "dejagnu/output_shouldfail.c": "PASS",
        "dejagnu/additional_sources.c": "PASS", "dejagnu/compile_nonshared.c": "UNSUPPORTED"}, r.stdout
    assert r.returncode == 0, r.stdout


def test_gpu_build_columns_check_the_lookup(tmp_path):
    """The pass puts the lookup before every indirect and virtual call on both GPU triples;
    without it (native) the column fails, naming the call."""
    need_build()
    prog = os.path.join(ROOT, "conformance", "programs", "virtual_mapped_object.cpp")
    for backend in ("gpu-build:sm_90", "gpu-build:gfx90a"):
        res, record = run_cell(Cell(prog, backend, "native"), str(tmp_path / "out"), str(tmp_path))
        assert res.code == oc.FAIL and "not preceded by __llvm_omp_indirect_call_lookup" in res.reason, res
    res, record = run_cell(Cell(prog, "gpu-build:sm_90", "pass"), str(tmp_path / "out"), str(tmp_path))
    assert res.code == oc.PASS, (res, record["notes"])
    assert "2 virtual; every one looked up first" in record["notes"]
    if os.path.exists("/usr/local/cuda/bin/ptxas"):
        assert "ptxas" in record["compile_command"]
    else:
        assert "PTX not assembled" in record["notes"]
    plain = os.path.join(FIXTURES, "plain", "indirect_scalar.c")
    res, record = run_cell(Cell(plain, "gpu-build:gfx90a", "pass", os.path.join(FIXTURES, "plain")),
                           str(tmp_path / "out"), str(tmp_path))
    assert res.code == oc.PASS and "ld.lld" in record["compile_command"], (res, record)


def test_gpu_build_columns_through_the_cli(tmp_path):
    """`ompsim matrix --backend gpu-build:sm_90,gpu-build:gfx90a` on this machine: the pass
    build of a virtual-call program passes both columns; the native build fails them."""
    need_build()
    base = [OMPSIM, "matrix", "--no-build", "-j", "1", "--backend", "gpu-build:sm_90,gpu-build:gfx90a",
            "--program", "virtual_mapped_object"]
    ok = subprocess.run(base + ["--out", str(tmp_path / "pass")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True, timeout=600)
    assert ok.returncode == 0, ok.stdout
    assert re.search(r"virtual_mapped_object\s+pass\s+pass", ok.stdout), ok.stdout
    bad = subprocess.run(base + ["--translate", "native", "--out", str(tmp_path / "native")], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=600)
    assert bad.returncode == 1, bad.stdout
    assert re.search(r"virtual_mapped_object\s+FAIL!\s+FAIL!", bad.stdout), bad.stdout
    doc = json.load(open(tmp_path / "native" / "results.json"))
    assert all("not preceded by __llvm_omp_indirect_call_lookup" in r["reason"] for r in doc["records"]), doc


def test_expectations_lines_through_the_cli_stale_fails_optional_runs(tmp_path):
    suite = tmp_path / "mine"
    suite.mkdir()
    (suite / "ok.c").write_text("int main(void) { return 0; }\n")
    (suite / "skipped.c").write_text("int main(void) { return 1; }\n")
    expectations = suite / "ompsim-expectations.txt"
    expectations.write_text("# mine\nskipped.c UNSUPPORTED true -- not for here\nlibc/* UNSUPPORTED true -- stale\n")
    base = [OMPSIM, "matrix", "--no-build", "-q", "--suite", str(suite), "--out", str(tmp_path / "out"),
            "-j", "1", "--backend", "host-upstream"]
    r = subprocess.run(base, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    assert (r.returncode, r.stdout) == (2, ""), r.stdout
    assert r.stderr.splitlines() == [
        "ompsim: matrix: --suite %s: %s:3: 'libc/*' matches no program of the suite (remove the line, or start it "
        "with 'optional' if its programs may be absent, as in a partial checkout)" % (suite, expectations)]
    expectations.write_text("# mine\noptional skipped.c UNSUPPORTED true -- not for here\n"
                            "optional libc/* UNSUPPORTED true -- a folder this checkout lacks\n")
    r = subprocess.run(base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0, r.stdout
    doc = json.load(open(tmp_path / "out" / "results.json"))
    assert {k[0]: v for k, v in outcomes(doc).items()} == {"mine/ok.c": ("PASS", True),
                                                           "mine/skipped.c": ("UNSUPPORTED", True)}


def test_columns_that_compile_alike_share_a_lit_tests_compiles(tmp_path, compile_cache):
    """sim and ours-host run the same `ompsim cc` build of a lit test: it is compiled once,
    each cell runs its own copy (a run writing beside %t leaves the other's alone), and a
    compile error is each cell's outcome."""
    need_build()
    suite = tmp_path / "lit"
    suite.mkdir()
    (suite / "ok.c").write_text(
        "// RUN: %libomptarget-compile-generic -DVALUE=7\n"
        "// RUN: %libomptarget-run-generic > %t.out && %fcheck-generic < %t.out && rm %t\n"
        '#include <stdio.h>\nint main(void) {\n  int x = 0;\n#pragma omp target map(tofrom : x)\n'
        '  x = VALUE;\n  printf("x=%d\\n", x);\n  return 0;\n}\n// CHECK: x=7\n')
    (suite / "bad.c").write_text("// RUN: %libomptarget-compile-run-and-check-generic\nint main(void) { return nope; }\n")
    out = tmp_path / "out"
    for backend in ("sim", "ours-host"):
        work = tmp_path / ("w-" + backend)
        work.mkdir()
        res, record = run_cell(Cell(str(suite / "ok.c"), backend, "pass", str(suite)), str(out), str(work))
        assert res.code == oc.PASS, (backend, res, record["stdout_tail"])
        assert (work / "Output" / "ok.c.tmp.out").read_text() == "x=7\n"
        assert str(work) in record["stdout_tail"] and "lit-" not in record["stdout_tail"]
        res, record = run_cell(Cell(str(suite / "bad.c"), backend, "pass", str(suite)), str(out), str(work))
        assert res.code == oc.COMPILE_ERROR and "nope" in res.reason, (backend, res)
    builds = sorted(p.name for p in compile_cache.iterdir() if p.is_dir())
    assert [b.split("-")[1] for b in builds] == ["lit_bad.c", "lit_ok.c"], builds
    # The shared build keeps its program although the first cell's run step removed its copy.
    assert [p.name for p in (compile_cache / builds[1] / "Output").iterdir()] == ["ok.c.tmp"]
