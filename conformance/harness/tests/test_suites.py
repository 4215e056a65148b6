"""Unit tests of user suites: style detection, lit and DejaGnu parsing, expectations files,
lit RUN expansion, the device-IR lookup check, and comparing / joining results (no compiler)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from harness import devir, report, suites
from harness.features import backend_features
from harness.header import HeaderError
from harness.runner import lit_steps

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FIXTURES = os.path.join(ROOT, "conformance", "suites")
OMPSIM = os.path.join(ROOT, "scripts", "ompsim")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text, style", [
    ("// CHECKS: x\nint main(){}", "ompsim"),
    ("// RUN: %libomptarget-compile-run-and-check-generic\n// CHECK: a\n", "lit"),
    ("/* { dg-do run } */\nint main(){}", "dejagnu"),
    ("int main(void) { return 0; }", "plain"),
])
def test_style_is_detected_per_file(text, style):
    assert suites.detect_style(text) == style


def test_fixture_suites_have_every_style_and_skip_helper_folders():
    found = {os.path.relpath(p, FIXTURES) for d in ("lit", "dejagnu", "plain")
             for p in suites.discover(os.path.join(FIXTURES, d))}
    assert "lit/check_next_not.c" in found and "dejagnu/output_shouldfail.c" in found
    assert not any("Inputs" in p for p in found)
    styles = {suites.parse_program(os.path.join(FIXTURES, p), os.path.join(FIXTURES, p.split("/")[0])).style
              for p in found}
    assert styles == {"lit", "dejagnu", "plain"}


def test_lit_run_lines_join_continuations_and_map_features(tmp_path):
    p = write(tmp_path, "s/t.c", "// RUN: %libomptarget-compile-generic && \\\n"
                                 "// RUN:   %libomptarget-run-generic | %fcheck-generic\n"
                                 "// REQUIRES: unified_shared_memory\n"
                                 "// UNSUPPORTED: amdgcn-amd-amdhsa, libc\n"
                                 "// XFAIL: x86_64-unknown-linux-gnu-LTO\n")
    spec = suites.parse_program(p)
    assert spec.lit_runs == ["%libomptarget-compile-generic &&  %libomptarget-run-generic | %fcheck-generic"]
    sim, host = backend_features("sim", "pass"), backend_features("ours-host", "pass")
    assert not spec.requires[0](sim) and spec.requires[0](host)        # usm
    gfx = backend_features("gpu-build:gfx90a", "pass")
    assert any(u.expr(gfx) for u in spec.unsupported)
    assert not any(u.expr(host) for u in spec.unsupported)            # libc is false, not an error
    assert not spec.xfail[0].expr(host)                               # -LTO triples never hold


def test_lit_gpu_is_a_separate_address_space_and_vendor_names_stay_false(tmp_path):
    p = write(tmp_path, "s/g.c", "// RUN: %libomptarget-compile-run-and-check-generic\n"
                                 "// REQUIRES: gpu\n"
                                 "// UNSUPPORTED: nvidiagpu, amdgpu, mi200, hsa, apu, pgo, libc\n")
    spec = suites.parse_program(p)
    for column in ("sim", "sim-ir", "gpu-build:sm_90", "cuda-upstream"):
        assert spec.requires[0](backend_features(column, "pass")), column
    for column in ("ours-host", "host-upstream"):
        assert not spec.requires[0](backend_features(column, "native")), column
    for column in ("sim", "sim-ir", "ours-host", "host-upstream"):
        assert not any(u.expr(backend_features(column, "pass")) for u in spec.unsupported), column
    assert any(u.expr(backend_features("cuda-upstream", "native")) for u in spec.unsupported)
    assert any(u.expr(backend_features("amdgpu-upstream", "native")) for u in spec.unsupported)


def test_openmp_vv_layout_header_folder_is_included_not_run(tmp_path):
    write(tmp_path, "vv/ompvv/ompvv.h", "#define OMPVV_TEST_OFFLOADING\n")
    write(tmp_path, "vv/ompvv/libompvv.c", "int ompvv_helper;\n")
    p = write(tmp_path, "vv/tests/5.0/target/test_a.c", '#include "ompvv.h"\nint main(void) { return 0; }\n')
    root = str(tmp_path / "vv")
    assert [os.path.relpath(f, root) for f in suites.discover(root)] == ["tests/5.0/target/test_a.c"]
    spec = suites.parse_program(p, root)
    assert spec.style == "plain" and spec.build_args == ["-I" + os.path.join(root, "ompvv")]
    # Without the folder nothing is added.
    q = write(tmp_path, "other/t.c", "int main(void) { return 0; }\n")
    assert suites.parse_program(q, str(tmp_path / "other")).build_args == []


def test_openmp_vv_fortran_builds_with_its_folders_openmp_version(tmp_path):
    # flang-22 defaults to OpenMP 3.1: OpenMP_VV's Fortran tests build with their folder's version.
    write(tmp_path, "vv/ompvv/ompvv.F90", "! header\n")
    f = write(tmp_path, "vv/tests/5.2/target/test_a.F90", "program p\nend program\n")
    c = write(tmp_path, "vv/tests/5.2/target/test_b.c", "int main(void) { return 0; }\n")
    g = write(tmp_path, "vv/tests/4.5/test_c.f90", "program p\nend program\n")
    root = str(tmp_path / "vv")
    inc = "-I" + os.path.join(root, "ompvv")
    assert suites.parse_program(f, root).build_args == [inc, "-fopenmp-version=52"]
    assert suites.parse_program(g, root).build_args == [inc, "-fopenmp-version=45"]
    assert suites.parse_program(c, root).build_args == [inc]


def test_expectations_file_kept_outside_the_suite(tmp_path):
    p = write(tmp_path, "ro/a/t.c", "int main(void) { return 1; }\n")
    write(tmp_path, "ro/ompsim-expectations.txt", "a/t.c UNSUPPORTED true -- the suite's own line\n")
    other = write(tmp_path, "elsewhere.txt", "a/*.c XFAIL sim -- kept beside a read-only suite\n")
    root = str(tmp_path / "ro")
    spec = suites.parse_program(p, root, other)
    assert [e.reason for e in spec.xfail] == ["kept beside a read-only suite (elsewhere.txt)"]
    assert spec.unsupported == []
    assert [e.reason for e in suites.parse_program(p, root).unsupported] == ["the suite's own line (ompsim-expectations.txt)"]
    with pytest.raises(suites.SuiteError, match="expectations file .*missing.txt: No such file"):
        suites.expectations(root, str(tmp_path / "missing.txt"))


def test_unreadable_lit_test_is_unsupported_where_its_expectations_line_says(tmp_path):
    p = write(tmp_path, "s/t.c", "// RUN: %clang-generic t.o -o %t 2>&1 | \\\n// %fcheck-plain-generic %s\n")
    write(tmp_path, "s/ompsim-expectations.txt", "t.c UNSUPPORTED sim -- its RUN line is unterminated upstream\n")
    root = str(tmp_path / "s")
    with pytest.raises(HeaderError):
        suites.parse_program(p, root)
    assert suites.unsupported_by_expectations(p, root, backend_features("sim", "pass", "c")).startswith(
        "its RUN line is unterminated upstream")
    assert suites.unsupported_by_expectations(p, root, backend_features("ours-host", "pass", "c")) is None


def test_lit_steps_map_onto_the_column(tmp_path):
    p = write(tmp_path, "s/t.c", "// RUN: %libomptarget-compile-run-and-check-generic\n"
                                 "// RUN: %libomptarget-compile-nvptx64-nvidia-cuda\n"
                                 "// RUN: %clang-generic -shared %S/Inputs/a.c -o %t.so\n")
    spec = suites.parse_program(p)
    prefixes = {"c": ["CC"], "c++": ["CXX"], "fortran": ["FC"]}
    steps = lit_steps(spec, "sim", prefixes, str(tmp_path / "s"), "/w/Output/t.c.tmp")
    assert steps[0] == ("compile", "CC -I%s -fuse-ld=lld  %s -o /w/Output/t.c.tmp" % (tmp_path / "s", p))
    assert steps[1][0] == "run" and steps[1][1].startswith("/w/Output/t.c.tmp | ")
    assert steps[1][1].endswith("FileCheck " + p)
    assert steps[2] == ("run", "true ignored-command")                # another target's substitution
    assert steps[3][1].startswith("CC ") and "%s/Inputs/a.c -o /w/Output/t.c.tmp.so" % os.path.dirname(p) in steps[3][1]
    gpu = lit_steps(spec, "gpu-build:sm_90", prefixes, str(tmp_path), "/t")
    assert gpu[2] == ("compile", "CC -I%s -fuse-ld=lld  %s -o /t" % (tmp_path, p))


def test_lit_clangxx_and_basename_substitutions(tmp_path):
    p = write(tmp_path, "s/t.cpp", "// RUN: %clang++ %flags -x cuda %s -o %t.cuda\n"
                                   "// RUN: env LLVM_PROFILE_FILE=%basename_t.profraw %t\n")
    spec = suites.parse_program(p)
    prefixes = {"c": ["CC"], "c++": ["CXX"], "fortran": ["FC"]}
    steps = lit_steps(spec, "sim", prefixes, str(tmp_path / "s"), "/w/Output/t.cpp.tmp")
    assert steps[0][1].startswith("CXX -I") and steps[0][1].endswith("%s -o /w/Output/t.cpp.tmp.cuda" % p)
    assert steps[1][1] == "env LLVM_PROFILE_FILE=t.cpp.tmp.profraw /w/Output/t.cpp.tmp"


def test_unknown_lit_substitution_is_named(tmp_path):
    p = write(tmp_path, "s/t.c", "// RUN: %libomptarget-compilexxx-generic-force-usm && %libomptarget-run-generic\n"
                                 "// RUN: %libomptarget-frobnicate-generic\n")
    spec = suites.parse_program(p)
    prefixes = {"c": ["CC"], "c++": ["CXX"], "fortran": ["FC"]}
    spec.lit_runs = spec.lit_runs[:1]
    steps = lit_steps(spec, "sim", prefixes, str(tmp_path), "/t")
    assert steps[0][0] == "compile" and steps[0][1].startswith("CXX ") and "-fopenmp-force-usm" in steps[0][1]
    spec = suites.parse_program(p)
    with pytest.raises(HeaderError, match="lit substitution %libomptarget-frobnicate-generic is not known here"):
        lit_steps(spec, "sim", prefixes, str(tmp_path), "/t")


def test_dejagnu_directives(tmp_path):
    write(tmp_path, "g/aux.c", "int aux;\n")
    p = write(tmp_path, "g/t.c", '/* { dg-do run { target offload_device_nonshared_as } } */\n'
                                 '/* { dg-additional-options "-foffload=-lm -DX=1 -foffload-options=-O2" } */\n'
                                 '/* { dg-additional-sources "aux.c" } */\n'
                                 '/* { dg-output "a\\\\\\[1\\\\\\](\\n|\\r\\n)" } */\n'
                                 '/* { dg-output {b+} } */\n'
                                 '/* { dg-shouldfail "aborts" } */\n'
                                 '/* { dg-set-target-env-var OMP_X "1" } */\n')
    spec = suites.parse_program(p)
    assert spec.style == "dejagnu" and spec.action == "run" and spec.should_fail
    assert spec.build_args == ["-DX=1"] and "-foffload=-lm" in spec.checks
    assert spec.extra_sources == [str(tmp_path / "g" / "aux.c")]
    assert [pat for pat, _ in spec.output_patterns] == ["a\\[1\\](\n|\r\n)", "b+"]
    assert spec.env == {"OMP_X": "1"}
    assert not spec.requires[0](backend_features("ours-host", "pass"))
    assert spec.requires[0](backend_features("sim", "pass"))


def test_dejagnu_classification_uses_output_and_shouldfail(tmp_path):
    from harness import outcome as oc
    p = write(tmp_path, "g/t.c", '/* { dg-output "value 7(\\n|\\r\\n|\\r)" } */\n/* { dg-output "bye" } */\n'
                                 '/* { dg-shouldfail "x" } */\n')
    spec = suites.parse_program(p)
    f = backend_features("sim", "pass")
    assert oc.classify_dejagnu_run(spec, f, oc.RunResult(-6, "value 7\nbye\n", "")).code == oc.PASS
    assert oc.classify_dejagnu_run(spec, f, oc.RunResult(0, "value 7\nbye\n", "")).code == oc.FAIL
    bad = oc.classify_dejagnu_run(spec, f, oc.RunResult(1, "value 8\nbye\n", ""))
    assert bad.code == oc.FAIL and "dg-output" in bad.reason


def test_dejagnu_error_tests_are_unsupported(tmp_path):
    p = write(tmp_path, "g/t.c", '/* { dg-do compile } */\nint x = y; /* { dg-error "undeclared" } */\n')
    spec = suites.parse_program(p)
    assert spec.action == "compile"
    assert spec.unsupported and "GCC" in spec.unsupported[0].reason


def test_expectations_file_applies_and_rejects_unknown_features(tmp_path):
    write(tmp_path, "s/a.c", "int main(void) { return 1; }\n")
    write(tmp_path, "s/ompsim-expectations.txt", "# comment\na.c XFAIL sim && translate=native -- known\n")
    spec = suites.parse_program(str(tmp_path / "s" / "a.c"), str(tmp_path / "s"))
    assert spec.name == "s/a.c"
    assert spec.xfail[0].expr(backend_features("sim", "native")) and "known" in spec.xfail[0].reason
    write(tmp_path, "t/a.c", "int main(void) { return 1; }\n")
    write(tmp_path, "t/ompsim-expectations.txt", "a.c XFAIL simm -- typo\n")
    with pytest.raises(suites.SuiteError, match=r"ompsim-expectations.txt:1: unknown feature 'simm'"):
        suites.expectations(str(tmp_path / "t"))


def test_a_pass_line_lifts_the_programs_own_xfail_where_it_holds(tmp_path):
    write(tmp_path, "w/a.c", "// RUN: %libomptarget-compile-run-and-check-generic\n"
                             "// XFAIL: nvptx64-nvidia-cuda\nint main(void) { return 0; }\n")
    write(tmp_path, "w/ompsim-expectations.txt", "a.c PASS nvptx && translate=pass -- no hardware hang here\n")
    spec = suites.parse_program(str(tmp_path / "w" / "a.c"), str(tmp_path / "w"))
    holds = lambda backend, translate: any(x.expr(backend_features(backend, translate)) for x in spec.xfail)
    assert not holds("sim-nvptx", "pass")        # lifted: the run must pass
    assert holds("sim-nvptx", "native")          # the lit line still holds where PASS does not
    assert not holds("sim", "pass")              # and never held off nvptx
    assert "except where nvptx && translate=pass" in spec.xfail[0].expr.text


def test_a_stale_expectations_line_names_its_file_and_line(tmp_path):
    write(tmp_path, "u/a.c", "int main(void) { return 1; }\n")
    path = write(tmp_path, "u/ompsim-expectations.txt",
                 "# header\na.c XFAIL true -- known\nlibc/* UNSUPPORTED true -- stale\n")
    with pytest.raises(suites.SuiteError) as e:
        suites.expectations(str(tmp_path / "u"))
    assert str(e.value).splitlines() == [
        "%s:3: 'libc/*' matches no program of the suite (remove the line, or start it with 'optional' if its "
        "programs may be absent, as in a partial checkout)" % path]


def test_an_optional_expectations_line_may_match_nothing(tmp_path):
    write(tmp_path, "v/a.c", "int main(void) { return 1; }\n")
    write(tmp_path, "v/libc/b.c", "int main(void) { return 1; }\n")
    write(tmp_path, "v/ompsim-expectations.txt", "optional  libc/*  UNSUPPORTED true -- no GPU libc\n"
                                                 "optional ompt/* UNSUPPORTED true -- absent here\n"
                                                 "a.c XFAIL true -- known\n")
    table = suites.expectations(str(tmp_path / "v"))
    assert sorted(table) == ["a.c", "libc/b.c"]                      # the marker still applies where it matches
    assert [k for k, _ in table["libc/b.c"]] == ["UNSUPPORTED"] and "no GPU libc" in table["libc/b.c"][0][1].reason
    # A program named "optional" is still a program, not the marker.
    entries = suites.parse_expectations("optional XFAIL true -- a program so named\n", "f.txt")
    assert [(e[1], e[2], e[4]) for e in entries] == [("optional", "XFAIL", False)]
    with pytest.raises(suites.SuiteError, match=r"^f.txt:1: expected '\[optional\] <program>"):
        suites.parse_expectations("optional libc/*\n", "f.txt")


@pytest.mark.parametrize("style, text", [
    ("plain", "int main() { return 0; }\n"),
    ("dejagnu", "// { dg-do run }\nint main() { return 0; }\n"),
    ("lit", "// RUN: %libomptarget-compilexx-run-and-check-generic\nint main() { return 0; }\n"),
])
def test_every_cxx_extension_is_collected_as_cxx_in_every_style(tmp_path, style, text):
    for ext in (".C", ".cc", ".cxx", ".cpp"):
        write(tmp_path, "s/t%s" % ext, text)
    write(tmp_path, "s/t.c", text)
    found = suites.discover(str(tmp_path / "s"))
    assert [os.path.basename(p) for p in found] == ["t.C", "t.c", "t.cc", "t.cpp", "t.cxx"]
    langs = {os.path.basename(p): (suites.parse_program(p, str(tmp_path / "s")).style,
                                   suites.parse_program(p, str(tmp_path / "s")).language) for p in found}
    assert langs == {"t.C": (style, "c++"), "t.c": (style, "c"), "t.cc": (style, "c++"),
                     "t.cpp": (style, "c++"), "t.cxx": (style, "c++")}


def test_malformed_lit_test_is_a_header_error(tmp_path):
    p = write(tmp_path, "s/t.c", "// RUN: %libomptarget-compile-generic \\\n")
    with pytest.raises(HeaderError, match="continuation"):
        suites.parse_program(p)


# --- device IR ----------------------------------------------------------------------------

IR_HEADER = """define void @k(ptr %obj, ptr %fp) {
entry:
"""
IR_MD = """}
!1 = !{!"vtable pointer", !2, i64 0}
!2 = !{!"Simple C++ TBAA"}
!3 = !{!1, !1, i64 0}
"""


def test_lookup_check_accepts_looked_up_calls():
    ir = IR_HEADER + """  %f = call ptr @__llvm_omp_indirect_call_lookup(ptr %fp)
  call void %f()
  %vt = load ptr, ptr %obj, align 8, !tbaa !3
  %vt.dev = call ptr @__llvm_omp_indirect_call_lookup(ptr %vt)
  %slot = getelementptr inbounds i8, ptr %vt.dev, i64 8
  %m = load ptr, ptr %slot, align 8
  %m.dev = call ptr @__llvm_omp_indirect_call_lookup(ptr %m)
  %r = tail call i32 %m.dev(ptr %obj)
  call void @direct()
  %call = getelementptr i8, ptr %obj, i64 8
  %g = getelementptr i8, ptr %call, i64 8
  ret void
""" + IR_MD
    rep = devir.check(ir)
    assert (rep.indirect_calls, rep.virtual_calls, rep.problems) == (2, 1, [])


def test_lookup_check_reports_a_call_and_a_vtable_read_without_lookup():
    ir = IR_HEADER + """  call void %fp()
  %vt = load ptr, ptr %obj, align 8, !tbaa !3
  %slot = getelementptr inbounds i8, ptr %vt, i64 8
  %m = load ptr, ptr %slot, align 8
  %m.dev = call ptr @__llvm_omp_indirect_call_lookup(ptr %m)
  %r = tail call i32 %m.dev(ptr %obj)
  ret void
""" + IR_MD
    rep = devir.check(ir)
    assert rep.indirect_calls == 2 and len(rep.problems) == 2
    assert "@k: call through %fp is not preceded by __llvm_omp_indirect_call_lookup" in rep.problems[0]
    assert "vtable pointer %vt is read without" in rep.problems[1]


# --- comparing and joining results -------------------------------------------------------

def rec(program, outcome, expected=True, backend="sim", translate="pass", reason=""):
    return {"program": program, "backend": backend, "translate": translate, "outcome": outcome,
            "expected": expected, "reason": reason, "checks": ""}


OLD = {"environment": {}, "columns": [["sim", "pass"]],
       "records": [rec("a", "PASS"), rec("b", "PASS"), rec("c", "XFAIL"), rec("d", "FAIL", False), rec("gone", "PASS")]}
NEW = {"environment": {}, "columns": [["sim", "pass"]],
       "records": [rec("a", "PASS"), rec("b", "FAIL", False, reason="exit 1: planted"), rec("c", "XFAIL"),
                   rec("d", "PASS"), rec("new", "PASS")]}


def test_diff_lists_regressions_first():
    d = report.diff(OLD, NEW)
    assert [k[0] for k, _, _ in d["regressions"]] == ["b"]
    assert [k[0] for k, _, _ in d["changes"]] == ["d"]
    assert [k[0] for k, _, _ in d["added"]] == ["new"] and [k[0] for k, _, _ in d["removed"]] == ["gone"]
    text = report.diff_text(d)
    assert text.index("regressions: 1") < text.index("b sim/pass: pass -> FAIL!") < text.index("other changes: 1")


def test_diff_command_exits_non_zero_on_a_planted_regression(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(OLD))
    new.write_text(json.dumps(NEW))
    html = tmp_path / "cmp.html"
    r = subprocess.run([OMPSIM, "matrix", "diff", str(old), str(new), "--html", str(html)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 1, r.stdout
    assert r.stdout.splitlines()[0] == "regressions: 1" and "b sim/pass: pass -> FAIL!" in r.stdout
    page = html.read_text()
    assert "Changes since" in page and "regression" in page and "planted" in page
    same = subprocess.run([OMPSIM, "matrix", "diff", str(old), str(old)], stdout=subprocess.PIPE, text=True)
    assert same.returncode == 0 and "regressions: 0" in same.stdout


def test_merge_refuses_a_cell_in_two_shards():
    with pytest.raises(report.MergeError, match="cell a sim/pass is in both x and y"):
        report.merge_docs([("x", OLD), ("y", NEW)])


def test_merge_junit_sums_cases(tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_text('<testsuites><testsuite tests="1"><testcase classname="m" name="t1" time="1"/></testsuite></testsuites>')
    b.write_text('<testsuites><testsuite tests="1"><testcase classname="m" name="t0" time="2">'
                 '<failure message="x"/></testcase></testsuite></testsuites>')
    text = report.merge_junit([str(a), str(b)])
    assert 'tests="2"' in text and 'failures="1"' in text and text.index('name="t0"') < text.index('name="t1"')


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


def test_starting_expectations_files_parse():
    folder = os.path.join(ROOT, "conformance", "expectations")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            text = f.read()
        entries = suites.parse_expectations(text, name)
        assert entries, name
        # The header documents the marker, and the lines that use it are for folders a
        # checkout may lack (the LLVM file's libc/ and ompt/, GCC's pinned-memory tests).
        header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
        assert "'optional'" in header, name
        if name != "openmp-vv.txt":
            assert any(e[4] for e in entries), name


def test_shipped_llvm_expectations_fit_a_partial_checkout(tmp_path):
    # A user's partial checkout of offload/test: ../shared's copy without libc/ (which it
    # lacks) and ompt/ (which it has).
    suite = os.path.join(os.path.dirname(ROOT), "shared", "suites", "llvm-offload-test")
    if not os.path.isdir(suite):
        pytest.skip("no %s (a checkout without ../shared)" % suite)
    copy = tmp_path / "llvm-offload-test"
    shutil.copytree(suite, copy, ignore=lambda d, names: [n for n in names if d == suite and n in ("libc", "ompt")])
    assert not (copy / "libc").exists() and not (copy / "ompt").exists()
    shutil.copy(os.path.join(ROOT, "conformance", "expectations", "llvm-offload-test.txt"),
                copy / suites.EXPECTATIONS_FILE)
    table = suites.expectations(str(copy))      # no error for the optional lines of absent folders
    assert not any(p.startswith(("libc/", "ompt/")) for p in table)
