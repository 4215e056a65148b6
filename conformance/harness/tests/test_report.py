"""Unit tests of the matrix report: table, unexpected outcomes, HTML."""
from harness import report


def rec(program, backend, translate, outcome, expected, reason=""):
    return {"program": program, "backend": backend, "translate": translate, "outcome": outcome,
            "expected": expected, "reason": reason, "checks": "checks " + program}


DOC = {"environment": {"date": "today", "clang": "clang 22"}, "columns": [["sim", "pass"], ["sim", "native"]],
       "records": [rec("a", "sim", "pass", "PASS", True), rec("a", "sim", "native", "XFAIL", True, "no lookup <here>"),
                   rec("b", "sim", "pass", "XPASS", False, "stale"), rec("b", "sim", "native", "UNAVAILABLE", True, "no GPU")]}


def test_unexpected_outcomes_are_found():
    assert [r["program"] for r in report.unexpected(DOC)] == ["b"]


def test_console_table_marks_unexpected_cells():
    text = report.console_table(DOC)
    assert "sim/pass" in text and "sim/native" in text
    assert "XPASS!" in text and "unavailable" in text
    assert "unexpected outcomes: 1" in text


def test_html_is_self_contained_and_escaped():
    page = report.html_report(DOC)
    assert page.startswith("<!DOCTYPE html>") and "<script src" not in page and "<link" not in page
    assert "no lookup &lt;here&gt;" in page and "no lookup <here>" not in page
    assert "1 unexpected outcome(s)" in page
