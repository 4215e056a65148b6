"""Progress of a matrix run, from the events the pytest controller sends (conftest.py).

`ompsim matrix` hands pytest a pipe (`--conformance-progress=FD`); the controller writes one
JSON object a line to it:

* ``{"event": "collected", "cells": [[cell id, program, column], ...]}`` once the cells
  are known (after sharding);
* ``{"event": "start", "id": ...}`` when a worker starts a cell;
* ``{"event": "done", "id": ..., "outcome": ..., "expected": ..., "compile": ...}`` when it
  has finished; ``compile`` says whether the cell compiled its program (``made``), found
  it in the compile cache (``cached``: an earlier run's, or another column's of this run)
  or compiled nothing (null).

`Progress` turns them into what a user sees while the run goes on: on a terminal one
status line rewritten in place (cells done of total, pass/fail/unexpected so far, compiles made and
found in the compile cache, elapsed and estimated time left, the slowest cell still running), with a lasting line for each
program that has an unexpected outcome; piped, one line per finished program with every
cell's outcome (and the status line after a minute without one). Labels are the final
table's (report.LABEL, ``!`` for unexpected).
"""
import json
import time

from . import outcome as oc
from .report import LABEL

#: Outcomes that count as neither pass nor fail in the status line.
SKIPS = (oc.UNSUPPORTED, oc.UNAVAILABLE)
#: Piped, a run with no program finished for this long prints the status line once, so a
#: log shows a slow program is still running (and which), not a hang.
QUIET_LIMIT_S = 60


def clock_text(seconds):
    """1:05, 12:00 or 1:02:03."""
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "%d:%02d:%02d" % (h, m, s) if h else "%d:%02d" % (m, s)


class Progress:
    """Renders matrix events to `stream`: live (a terminal) or one line per program (piped)."""

    def __init__(self, stream, live, width=100, clock=time.monotonic):
        self.stream, self.live, self.width, self.clock = stream, live, width, clock
        self.begun = clock()
        self.collected_at = None
        self.cells = {}          # id -> (program, column)
        self.per_program = {}    # program -> [cell ids] in collection order
        self.running = {}        # id -> start time
        self.results = {}        # id -> (outcome, expected)
        self.programs_done = 0
        self.counts = {"pass": 0, "fail": 0, "skip": 0, "unexpected": 0}
        self.compiles = {"made": 0, "cached": 0}
        self.status_shown = False
        self.last_draw = 0.0
        self.last_line = self.begun

    # --- events ----------------------------------------------------------------------

    def feed_line(self, line):
        """Takes one line of the event pipe; a line that is not an event is ignored."""
        try:
            event = json.loads(line)
        except ValueError:
            return
        if isinstance(event, dict):
            self.feed(event)

    def feed(self, event):
        kind = event.get("event")
        if kind == "collected":
            self._collected(event.get("cells") or [])
        elif kind == "start":
            self.running[event["id"]] = self.clock()
            self.draw(force=True)
        elif kind == "done":
            self._done(event["id"], event.get("outcome") or oc.UNRESOLVED, bool(event.get("expected")),
                       event.get("compile"))

    def _collected(self, cells):
        self.collected_at = self.clock()
        for cid, program, column in cells:
            if cid in self.cells:
                continue
            self.cells[cid] = (program, column)
            self.per_program.setdefault(program, []).append(cid)
        columns = len({c for _, c in self.cells.values()})
        self._line("ompsim matrix: %d cells: %d programs on %d column%s (collected in %.1fs)"
                   % (len(self.cells), len(self.per_program), columns, "" if columns == 1 else "s",
                      self.collected_at - self.begun))

    def _done(self, cid, outcome, expected, compile_=None):
        if cid in self.results:
            return
        if compile_ in self.compiles:
            self.compiles[compile_] += 1
        self.running.pop(cid, None)
        if cid not in self.cells:
            # A cell the collection did not name (should not happen): its own program.
            self.cells[cid] = (cid, "?")
            self.per_program[cid] = [cid]
        self.results[cid] = (outcome, expected)
        key = "pass" if outcome == oc.PASS else "skip" if outcome in SKIPS else "fail"
        self.counts[key] += 1
        if not expected:
            self.counts["unexpected"] += 1
        program = self.cells[cid][0]
        ids = self.per_program[program]
        if all(i in self.results for i in ids):
            self.programs_done += 1
            bad = any(not self.results[i][1] for i in ids)
            if not self.live or bad:
                self._line(self.program_line(program))
        self.draw(force=True)

    # --- text ------------------------------------------------------------------------

    def program_line(self, program):
        """`[ 12/440 0:42] suite/prog.c: sim/pass pass, host-upstream/native FAIL!`"""
        outcomes = []
        for cid in self.per_program[program]:
            outcome, expected = self.results[cid]
            outcomes.append("%s %s%s" % (self.cells[cid][1], LABEL.get(outcome, outcome), "" if expected else "!"))
        total = len(self.per_program)
        return "[%*d/%d %s] %s: %s" % (len(str(total)), self.programs_done, total,
                                       clock_text(self.clock() - self.begun), program, ", ".join(outcomes))

    def status_text(self, width=None):
        """The live status line; with `width`, the longest-running program's name loses its
        start (``…/api/x.c``) before the line is cut, so its end stays readable."""
        now = self.clock()
        if self.collected_at is None:
            return "ompsim matrix: collecting programs ... %s" % clock_text(now - self.begun)
        done, total = len(self.results), len(self.cells)
        c = self.counts
        parts = ["%d/%d cells" % (done, total),
                 "%d pass, %d fail, %d unexpected" % (c["pass"], c["fail"], c["unexpected"])]
        if any(self.compiles.values()):
            parts.append(self.compiles_text())
        spent = now - self.collected_at
        left = "~%s left" % clock_text(spent / done * (total - done)) if done else "? left"
        parts.append("%s, %s" % (clock_text(now - self.begun), left))
        text = "ompsim matrix: " + " | ".join(parts)
        if self.running:
            cid, since = min(self.running.items(), key=lambda kv: (kv[1], kv[0]))
            program, column = self.cells.get(cid, (cid, "?"))
            head = "%s | longest running: %ds " % (text, now - since)
            tail = " on %s" % column
            room = (width - 1 - len(head) - len(tail)) if width else len(program)
            if len(program) > room >= 12:
                program = "…" + program[len(program) - room + 1:]
            text = head + program + tail
        return text

    def compiles_text(self):
        """`12 compiled, 340 cached`: cells that compiled their program, and cells that found
        it in the compile cache."""
        return "%d compiled, %d cached" % (self.compiles["made"], self.compiles["cached"])

    # --- output ----------------------------------------------------------------------

    def draw(self, force=False):
        """Rewrites the status line (live: at most 5 times a second unless forced; piped: a
        line of its own after QUIET_LIMIT_S without one)."""
        now = self.clock()
        if not self.live:
            if self.collected_at is not None and now - self.last_line >= QUIET_LIMIT_S:
                self._line(self.status_text())
            return
        if not force and now - self.last_draw < 0.2:
            return
        self.last_draw = now
        text = self.status_text(self.width)
        if len(text) > self.width - 1:
            text = text[: self.width - 2] + "…"
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self.status_shown = True

    def _line(self, text):
        """A lasting line (above the status line when live)."""
        if self.live and self.status_shown:
            self.stream.write("\r\x1b[K")
            self.status_shown = False
        self.stream.write(text + "\n")
        self.stream.flush()
        self.last_line = self.clock()
        self.draw(force=True)

    def close(self):
        """Clears the status line, so the final table starts on a clean line."""
        if self.live and self.status_shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.status_shown = False
