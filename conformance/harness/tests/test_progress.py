"""Unit tests of the matrix's progress display (harness/progress.py), on made-up events and a
clock the test moves: what a terminal and a pipe show as cells start and finish."""
import io
import json

from harness.progress import Progress, clock_text

CELLS = [["sim-pass-s/a.c", "s/a.c", "sim/pass"], ["host-upstream-native-s/a.c", "s/a.c", "host-upstream/native"],
         ["sim-pass-s/b.C", "s/b.C", "sim/pass"], ["host-upstream-native-s/b.C", "s/b.C", "host-upstream/native"]]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def run(live, width=200):
    out, clock = io.StringIO(), Clock()
    p = Progress(out, live, width=width, clock=clock)
    clock.now += 2
    p.feed_line(json.dumps({"event": "collected", "cells": CELLS}))
    p.feed({"event": "start", "id": "sim-pass-s/a.c"})
    p.feed({"event": "start", "id": "host-upstream-native-s/a.c"})
    clock.now += 10
    p.feed({"event": "done", "id": "sim-pass-s/a.c", "outcome": "PASS", "expected": True})
    p.feed({"event": "start", "id": "sim-pass-s/b.C"})
    clock.now += 5
    p.feed({"event": "done", "id": "host-upstream-native-s/a.c", "outcome": "XFAIL", "expected": True})
    p.feed({"event": "done", "id": "sim-pass-s/b.C", "outcome": "FAIL", "expected": False})
    return p, out, clock


def test_piped_prints_one_line_per_finished_program_and_no_status():
    p, out, clock = run(live=False)
    assert out.getvalue().splitlines() == [
        "ompsim matrix: 4 cells: 2 programs on 2 columns (collected in 2.0s)",
        "[1/2 0:17] s/a.c: sim/pass pass, host-upstream/native xfail",
    ]
    p.feed({"event": "start", "id": "host-upstream-native-s/b.C"})
    p.feed({"event": "done", "id": "host-upstream-native-s/b.C", "outcome": "UNSUPPORTED", "expected": True})
    p.close()
    assert out.getvalue().splitlines()[-1] == "[2/2 0:17] s/b.C: sim/pass FAIL!, host-upstream/native unsupported"
    assert "\r" not in out.getvalue()


def test_piped_shows_the_status_after_a_minute_without_a_finished_program():
    p, out, clock = run(live=False)
    p.feed({"event": "start", "id": "host-upstream-native-s/b.C"})
    clock.now += 59
    p.draw()
    assert len(out.getvalue().splitlines()) == 2
    clock.now += 1
    p.draw()
    p.draw()
    assert out.getvalue().splitlines()[2:] == [
        "ompsim matrix: 3/4 cells | 1 pass, 2 fail, 1 unexpected | 1:17, ~0:25 left"
        " | longest running: 60s s/b.C on host-upstream/native"]


def test_live_status_counts_estimates_and_names_the_longest_running_cell():
    p, out, clock = run(live=True)
    p.feed({"event": "start", "id": "host-upstream-native-s/b.C"})
    clock.now += 3
    # 3 of 4 done in 15 s since collection: about 5 s left; the last cell has run 3 s.
    assert p.status_text() == ("ompsim matrix: 3/4 cells | 1 pass, 2 fail, 1 unexpected | 0:20, ~0:06 left"
                               " | longest running: 3s s/b.C on host-upstream/native")
    text = out.getvalue()
    # Each redraw rewrites the one line in place; the passing program got no lasting line,
    # the one with an unexpected outcome did (it ends with a newline above the status).
    assert "\r\x1b[Kompsim matrix: 2/4 cells | 1 pass, 1 fail, 0 unexpected" in text
    assert "s/a.c: sim/pass" not in text
    assert "\r\x1b[K[2/2 0:17] s/b.C: sim/pass FAIL!, host-upstream/native" not in text   # b.C not finished yet
    p.feed({"event": "done", "id": "host-upstream-native-s/b.C", "outcome": "PASS", "expected": True})
    assert "\r\x1b[K[2/2 0:20] s/b.C: sim/pass FAIL!, host-upstream/native pass\n" in out.getvalue()
    p.close()
    assert out.getvalue().endswith("\r\x1b[K")           # the final table starts on a clean line


def test_status_counts_compiles_made_and_found_in_the_cache():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, True, width=200, clock=clock)
    p.feed({"event": "collected", "cells": CELLS})
    # Before any cell says how it built, the status line does not mention compiles.
    assert "compiled" not in p.status_text()
    p.feed({"event": "done", "id": "sim-pass-s/a.c", "outcome": "PASS", "expected": True, "compile": "made"})
    p.feed({"event": "done", "id": "host-upstream-native-s/a.c", "outcome": "PASS", "expected": True,
            "compile": "cached"})
    p.feed({"event": "done", "id": "sim-pass-s/b.C", "outcome": "PASS", "expected": True, "compile": "cached"})
    # A cell that compiled nothing (unsupported before its build) counts as neither.
    p.feed({"event": "done", "id": "host-upstream-native-s/b.C", "outcome": "UNSUPPORTED", "expected": True,
            "compile": None})
    assert " | 1 compiled, 2 cached | " in p.status_text()


def test_live_status_fits_the_terminal_and_shows_collection_before_cells():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, True, width=60, clock=clock)
    clock.now += 4
    p.draw()
    assert out.getvalue() == "\r\x1b[Kompsim matrix: collecting programs ... 0:04"
    p.feed({"event": "collected", "cells": CELLS})
    p.feed({"event": "start", "id": "sim-pass-s/a.c"})
    last = out.getvalue().rsplit("\r\x1b[K", 1)[1]
    assert len(last) == 59 and last.endswith("…")


def test_a_long_running_program_keeps_the_end_of_its_name():
    out, clock = io.StringIO(), Clock()
    name = "llvm-offload-test/offloading/a_rather_long_folder/program_with_a_long_name.cpp"
    p = Progress(out, True, width=160, clock=clock)
    p.feed({"event": "collected", "cells": [["c1", name, "host-upstream/native"]]})
    p.feed({"event": "start", "id": "c1"})
    clock.now += 7
    p.draw(force=True)
    last = out.getvalue().rsplit("\r\x1b[K", 1)[1]
    assert len(last) == 159, last
    assert last.startswith("ompsim matrix: 0/1 cells | 0 pass, 0 fail, 0 unexpected | 0:07, ? left | "
                           "longest running: 7s …"), last
    assert last.endswith("/program_with_a_long_name.cpp on host-upstream/native"), last
    p.width = 250
    p.draw(force=True)
    assert out.getvalue().endswith("longest running: 7s %s on host-upstream/native" % name)


def test_a_cell_collection_did_not_name_and_junk_lines_do_not_break_it():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, False, clock=clock)
    p.feed_line("not json\n")
    p.feed({"event": "collected", "cells": CELLS[:1]})
    p.feed({"event": "done", "id": "other", "outcome": "UNRESOLVED", "expected": False})
    assert out.getvalue().splitlines()[-1] == "[1/2 0:00] other: ? UNRESOLVED!"


def test_clock_text():
    assert [clock_text(s) for s in (0, 65, 720, 3723)] == ["0:00", "1:05", "12:00", "1:02:03"]
