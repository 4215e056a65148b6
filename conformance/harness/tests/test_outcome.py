"""Unit tests of outcome classification (no compiler, no device)."""
from harness import outcome as oc
from harness.features import backend_features
from harness.header import parse_text

SIM_PASS = backend_features("sim", "pass", "c")
SIM_NATIVE = backend_features("sim", "native", "c")
HOST = backend_features("host-upstream", "native", "c")


def spec(extra=""):
    return parse_text("// CHECKS: x\n" + extra, "prog.c")


def never_called(prefix, text):
    raise AssertionError("FileCheck must not run here")


def matches(prefix, text):
    return None


def run(code=0, out="PASS\n", err="", timed_out=False):
    return oc.RunResult(code, out, err, timed_out)


def test_pass_and_fail():
    assert oc.classify_run(spec(), SIM_PASS, run(), never_called).code == oc.PASS
    o = oc.classify_run(spec(), SIM_PASS, run(1, "", "FAIL prog.c:3: r is 1, expected 2\n"), never_called)
    assert (o.code, o.expected) == (oc.FAIL, False)
    assert "exit 1: FAIL prog.c:3" in o.reason


def test_stock_variable_notice_is_not_the_reason():
    notice = ("ompsim: ignoring LIBOMPTARGET_DEBUG: stock libomptarget variable ompsim does not honour "
              "(see docs/environment.md)\n")
    o = oc.classify_run(spec(), SIM_PASS, run(1, "", notice + "ompsim: device 0: kernel k faulted\n"), never_called)
    assert "exit 1: ompsim: device 0: kernel k faulted" in o.reason, o.reason


def test_signal_is_described():
    o = oc.classify_run(spec(), SIM_PASS, run(-11, "", ""), never_called)
    assert o.code == oc.FAIL and "killed by signal 11" in o.reason


def test_xfail_and_strict_xpass():
    s = spec("// XFAIL: translate=native -- no lookup\n")
    o = oc.classify_run(s, SIM_NATIVE, run(1, "", "boom\n"), never_called)
    assert (o.code, o.expected) == (oc.XFAIL, True) and "no lookup" in o.reason
    o = oc.classify_run(s, SIM_NATIVE, run(), never_called)
    assert (o.code, o.expected) == (oc.XPASS, False)
    assert oc.classify_run(s, SIM_PASS, run(), never_called).code == oc.PASS


def test_filecheck_mismatch_fails():
    s = spec("// CHECK: PASS\n")
    o = oc.classify_run(s, SIM_PASS, run(), lambda p, t: "expected string not found in input")
    assert o.code == oc.FAIL and "CHECK mismatch" in o.reason
    assert oc.classify_run(s, SIM_PASS, run(), matches).code == oc.PASS


def test_expected_diagnosed_failure():
    s = spec("// EXPECT-FAIL-IF: separate-address-space -- must fault\n// CHECK-FAIL-STDERR: ompsim: device\n"
             "// CHECK: result 42\n")
    seen = []

    def checker(prefix, text):
        seen.append(prefix)
        return None if "ompsim: device" in text or prefix == "CHECK" else "no diagnostic"

    o = oc.classify_run(s, SIM_PASS, run(1, "", "ompsim: device 0: kernel k called untranslated\n"), checker)
    assert (o.code, o.expected) == (oc.PASS, True) and seen == ["CHECK-FAIL-STDERR"]
    o = oc.classify_run(s, SIM_PASS, run(1, "", "Segmentation fault\n"), checker)
    assert o.code == oc.FAIL and "no diagnostic" in o.reason
    o = oc.classify_run(s, SIM_PASS, run(0, "result 42\n"), checker)
    assert o.code == oc.FAIL and "diagnosed failure is expected" in o.reason
    assert oc.classify_run(s, HOST, run(0, "result 42\n"), checker).code == oc.PASS


def test_timeout_is_never_expected():
    s = spec("// XFAIL: true -- broken\n")
    o = oc.classify_run(s, SIM_PASS, run(timed_out=True), never_called)
    assert (o.code, o.expected) == (oc.TIMEOUT, False)


def test_compile_outcomes():
    s = spec("// XFAIL-COMPILE: fortran -- flang says no\n")
    o = oc.classify_build(spec(), SIM_PASS, False, "x.c:1:1: error: bad thing\n1 error generated.\n")
    assert (o.code, o.expected, o.compiler_message) == (oc.COMPILE_ERROR, False, "x.c:1:1: error: bad thing")
    fortran = backend_features("sim", "pass", "fortran")
    o = oc.classify_build(s, fortran, False, "error: Semantic errors in x.f90\n./x.f90:3:1: error: INDIRECT\n")
    assert (o.code, o.expected) == (oc.COMPILE_ERROR, True) and "INDIRECT" in o.reason
    o = oc.classify_build(s, fortran, True, "")
    assert (o.code, o.expected) == (oc.XPASS, False)
    assert oc.classify_build(s, SIM_PASS, True, "") is None


def test_preconditions():
    s = spec("// REQUIRES: separate-address-space, !gpu\n// UNSUPPORTED: sim-ir -- no JIT here\n")
    assert oc.classify_preconditions(s, SIM_PASS) is None
    o = oc.classify_preconditions(s, backend_features("ours-host", "pass"))
    assert o.code == oc.UNSUPPORTED and "separate-address-space" in o.reason
    o = oc.classify_preconditions(s, backend_features("sim-ir", "pass"))
    assert o.code == oc.UNSUPPORTED and o.reason == "no JIT here"


def test_malformed_header_is_unresolved_before_any_compile(tmp_path, compile_cache):
    from harness.runner import Cell, run_cell
    prog = tmp_path / "bad.c"
    prog.write_text("// CHECKS: x\n// XFAIL: simulator -- typo\nint main(void) { return 0; }\n")
    o, record = run_cell(Cell(str(prog), "host-upstream", "native"), str(tmp_path / "out"), str(tmp_path))
    assert (o.code, o.expected) == (oc.UNRESOLVED, False)
    assert "unknown feature 'simulator'" in o.reason
    assert record["outcome"] == oc.UNRESOLVED and record["compile"] is None and not compile_cache.exists()
