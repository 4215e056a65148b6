"""Unit tests of the header language: parsing, validation, malformed headers."""
import pytest

from harness.header import HeaderError, parse_text

GOOD = """\
// CHECKS: a thing
// REQUIRES: c, !gpu
// XFAIL: sim && translate=native -- native code cannot translate
// XFAIL-COMPILE: fortran -- flang says no
// BUILD: -lm %inputs/x.c
// BUILD-SHLIB: libfoo.so: %inputs/foo.c -DX=1
// ENV: OMPSIM_NUM_DEVICES=2
// ARGS: a "b c"
// TIMEOUT: 30
// CHECK: PASS
// CHECK-NEXT: done
int main(void) { return 0; }
"""


def test_parses_every_directive():
    s = parse_text(GOOD, "/p/prog.c")
    assert s.name == "prog" and s.language == "c" and s.checks == "a thing"
    assert [r.text for r in s.requires] == ["c", "!gpu"]
    assert s.xfail[0].reason == "native code cannot translate"
    assert s.xfail[0].expr({"sim", "translate=native"}) and not s.xfail[0].expr({"sim", "translate=pass"})
    assert s.xfail_compile[0].expr({"fortran"})
    assert s.build_args == ["-lm", "%inputs/x.c"]
    assert s.shlibs == [("libfoo.so", ["%inputs/foo.c", "-DX=1"])]
    assert s.env == {"OMPSIM_NUM_DEVICES": "2"}
    assert s.args == ["a", "b c"]
    assert s.timeout == 30
    assert s.check_prefixes == {"CHECK"}


def test_fortran_comments_and_omp_sentinels():
    s = parse_text("! CHECKS: f\n!$omp declare target\n! CHECK: PASS\n", "x.f90")
    assert s.language == "fortran" and s.check_prefixes == {"CHECK"}


@pytest.mark.parametrize("text, message", [
    ("int main;\n", "exactly one 'CHECKS"),
    ("// CHECKS: a\n// CHECKS: b\n", "exactly one 'CHECKS"),
    ("// CHECKS: a\n// REQUIRE: c\n", "unknown directive REQUIRE"),
    ("// CHECKS: a\n// XFAIL: sim\n", "needs '<feature expression> -- <reason>'"),
    ("// CHECKS: a\n// XFAIL: sim -- \n", "needs '<feature expression> -- <reason>'"),
    ("// CHECKS: a\n// XFAIL: simulator -- why\n", "unknown feature 'simulator'"),
    ("// CHECKS: a\n// REQUIRES: sim &&\n", "ends early"),
    ("// CHECKS: a\n// REQUIRES: (sim\n", "ends early"),
    ("// CHECKS: a\n// ENV: 1X=2\n", "ENV needs NAME=VALUE"),
    ("// CHECKS: a\n// TIMEOUT: soon\n", "TIMEOUT needs a positive"),
    ("// CHECKS: a\n// BUILD-SHLIB: foo.so: x.c\n", "BUILD-SHLIB needs"),
    ("// CHECKS: a\n// EXPECT-FAIL-IF: sim -- faults\n", "needs CHECK-FAIL-STDERR"),
    ("// CHECKS: a\n// CHECK-FAIL-STDERR: x\n", "without an EXPECT-FAIL-IF"),
    ("// CHECKS: a\n// BUILD:\n", "has no value"),
    ("// CHECKS: a\n// CHECK-NEXTT: x\n", "unknown directive CHECK-NEXTT"),
])
def test_malformed_headers_are_errors(text, message):
    with pytest.raises(HeaderError, match=message.replace("(", r"\(").replace("'", "'")):
        parse_text(text, "prog.c")


def test_unknown_extension_is_an_error():
    with pytest.raises(HeaderError, match="unknown program language"):
        parse_text("// CHECKS: a\n", "prog.rs")


def test_error_names_the_line():
    with pytest.raises(HeaderError, match="^line 3: "):
        parse_text("// CHECKS: a\n\n// UNSUPPORTED: nope\n", "prog.c")
