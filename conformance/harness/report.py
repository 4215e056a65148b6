"""Renders merged matrix results (results.json) as a console table and a self-contained HTML page."""
import html
import json

from . import outcome as oc

#: Short cell labels for the console table.
LABEL = {oc.PASS: "pass", oc.FAIL: "FAIL", oc.XFAIL: "xfail", oc.XPASS: "XPASS", oc.UNSUPPORTED: "unsupported",
         oc.UNAVAILABLE: "unavailable", oc.COMPILE_ERROR: "compile-error", oc.UNRESOLVED: "UNRESOLVED",
         oc.TIMEOUT: "TIMEOUT"}
COLOURS = {oc.PASS: "#2e7d32", oc.FAIL: "#c62828", oc.XFAIL: "#f9a825", oc.XPASS: "#ad1457",
           oc.UNSUPPORTED: "#78909c", oc.UNAVAILABLE: "#90a4ae", oc.COMPILE_ERROR: "#ef6c00",
           oc.UNRESOLVED: "#6a1b9a", oc.TIMEOUT: "#4e342e"}


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def grid(doc):
    """(columns, programs, {(program, column): record}); a column is 'backend/translate'."""
    cols, progs, cells = [], [], {}
    for b, t in doc.get("columns", []):
        cols.append("%s/%s" % (b, t))
    for r in doc["records"]:
        col = "%s/%s" % (r["backend"], r["translate"])
        if col not in cols:
            cols.append(col)
        if r["program"] not in progs:
            progs.append(r["program"])
        cells[(r["program"], col)] = r
    return cols, sorted(progs), cells


def unexpected(doc):
    """Records whose outcome must fail the run."""
    return [r for r in doc["records"] if not r["expected"]]


def counts(doc):
    c = {}
    for r in doc["records"]:
        key = r["outcome"] + ("" if r["expected"] or r["outcome"] != oc.COMPILE_ERROR else " (unexpected)")
        c[key] = c.get(key, 0) + 1
    return c


def _short(text, n):
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def console_table(doc, reason_width=60):
    """The program × column table, then one line per non-pass cell with its short reason."""
    cols, progs, cells = grid(doc)
    width = max([len(p) for p in progs] + [7])
    cw = max([len(c) for c in cols] + [13])
    lines = ["%-*s  %s" % (width, "program", "  ".join("%-*s" % (cw, c) for c in cols))]
    for p in progs:
        row = []
        for c in cols:
            r = cells.get((p, c))
            label = "-" if r is None else LABEL[r["outcome"]] + ("" if r["expected"] else "!")
            row.append("%-*s" % (cw, label))
        lines.append("%-*s  %s" % (width, p, "  ".join(row)))
    lines.append("")
    notes = [r for r in doc["records"] if r["outcome"] != oc.PASS and (r["outcome"] != oc.UNSUPPORTED or not r["expected"])]
    for r in sorted(notes, key=lambda r: (r["expected"], r["program"])):
        lines.append("%s%-13s %s %s/%s: %s" % ("!" if not r["expected"] else " ", LABEL[r["outcome"]], r["program"],
                                                r["backend"], r["translate"], _short(r["reason"], reason_width)))
    lines.append("")
    lines.append("summary: " + ", ".join("%s %d" % (k, v) for k, v in sorted(counts(doc).items())))
    bad = unexpected(doc)
    lines.append("unexpected outcomes: %d%s" % (len(bad), "" if bad else " (all expectations hold)"))
    return "\n".join(lines)


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em} table{border-collapse:collapse;font-size:.85em}
th,td{border:1px solid #ccc;padding:3px 6px} th{background:#eee;position:sticky;top:0}
td.cell{color:#fff;text-align:center;cursor:pointer;min-width:7em}
td.cell details summary{list-style:none} td.cell details[open]{text-align:left;max-width:40em}
td.prog{font-family:monospace} .unexpected{outline:3px solid #000}
.legend span{display:inline-block;color:#fff;padding:2px 8px;margin:2px;border-radius:3px}
.reasons td{vertical-align:top} pre{white-space:pre-wrap;margin:0;font-size:.9em}
.env td:first-child{font-weight:bold}
"""


def html_report(doc, baseline=None, baseline_name="the baseline"):
    """A self-contained HTML page: summary, legend, colour-coded grid, expected-failure reasons;
    with `baseline` (an earlier results document), the changes since it, regressions first."""
    cols, progs, cells = grid(doc)
    changes = diff(baseline, doc) if baseline is not None else None
    before = {_key(r): r for r in baseline["records"]} if baseline is not None else {}
    e = html.escape
    env = doc.get("environment", {})
    bad = unexpected(doc)
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>ompsim conformance matrix</title>",
           "<style>%s</style></head><body>" % _CSS,
           "<h1>ompsim conformance matrix: OpenMP 5.1 indirect device invocation</h1>",
           "<p><b>%s</b> — %d cells, %d programs, %d columns. %s</p>" % (
               e(env.get("date", "")), len(doc["records"]), len(progs), len(cols),
               "<span style='color:#2e7d32'>No unexpected outcome.</span>" if not bad else
               "<span style='color:#c62828'>%d unexpected outcome(s) (outlined).</span>" % len(bad)),
           "<table class='env'>"]
    for k in ("ompsim", "clang", "flang", "platform", "python", "build_dir", "host"):
        if k in env:
            out.append("<tr><td>%s</td><td>%s</td></tr>" % (e(k), e(str(env[k]))))
    out.append("</table><p class='legend'>")
    for code, n in sorted(counts(doc).items()):
        base = code.split(" ")[0]
        out.append("<span style='background:%s'>%s: %d</span>" % (COLOURS.get(base, "#000"), e(code), n))
    out.append("</p><p>Click a cell for its reason, compiler message and output. "
               "A black outline marks an unexpected outcome.</p>")
    if changes is not None:
        out.append(comparison_html(changes, baseline_name))
    out.append("<table><tr><th>program</th><th>checks</th>%s</tr>" % "".join("<th>%s</th>" % e(c) for c in cols))
    for p in progs:
        any_rec = next((cells[(p, c)] for c in cols if (p, c) in cells), {})
        out.append("<tr><td class='prog'>%s</td><td>%s</td>" % (e(p), e(any_rec.get("checks", ""))))
        for c in cols:
            r = cells.get((p, c))
            if r is None:
                out.append("<td></td>")
                continue
            detail = []
            if r["reason"]:
                detail.append("<b>reason:</b> %s" % e(r["reason"]))
            if r.get("compiler_message"):
                detail.append("<b>compiler:</b> %s" % e(r["compiler_message"]))
            if r.get("exit_code") is not None:
                detail.append("<b>exit:</b> %s, %.2fs%s" % (r["exit_code"], r.get("duration", 0),
                                                             " (run %.2fs)" % r["run_s"] if r.get("run_s") else ""))
            if r.get("notes"):
                detail.append("<b>notes:</b> %s" % e(r["notes"]))
            if r.get("stderr_tail"):
                detail.append("<b>stderr:</b><pre>%s</pre>" % e(r["stderr_tail"][-600:]))
            old = before.get(_key(r))
            if changes is not None and (old is None or (old["outcome"], old["expected"]) != (r["outcome"], r["expected"])):
                detail.append("<b>before:</b> %s" % e(_label(old)))
            out.append("<td class='cell%s' style='background:%s' title='%s'><details><summary>%s</summary>%s</details></td>" % (
                "" if r["expected"] else " unexpected", COLOURS[r["outcome"]], e(_short(r["reason"], 300)),
                e(LABEL[r["outcome"]]), "<br>".join(detail)))
        out.append("</tr>")
    out.append("</table><h2>Why each expected failure is expected</h2><table class='reasons'>"
               "<tr><th>program</th><th>columns</th><th>declared reason and what was seen</th></tr>")
    seen = {}
    for r in doc["records"]:
        if r["expected"] and r["outcome"] in (oc.XFAIL, oc.COMPILE_ERROR) or (
                r["outcome"] == oc.PASS and r["reason"]):
            key = (r["program"], r["reason"].split(" [")[0])
            seen.setdefault(key, []).append("%s/%s" % (r["backend"], r["translate"]))
    for (prog, reason), where in sorted(seen.items()):
        out.append("<tr><td class='prog'>%s</td><td>%s</td><td>%s</td></tr>" % (e(prog), e(", ".join(where)), e(reason)))
    out.append("</table></body></html>")
    return "\n".join(out)


# --- comparing runs -------------------------------------------------------------------------

#: Outcomes that count as a loss when a cell that passed before ends in one of them.
LOST = (oc.FAIL, oc.XFAIL, oc.XPASS, oc.COMPILE_ERROR, oc.UNRESOLVED, oc.TIMEOUT)


def _key(r):
    return (r["program"], r["backend"], r["translate"])


def diff(old, new):
    """Compares two results documents cell by cell.

    Returns {"regressions", "changes", "added", "removed"}: lists of (key, old record or
    None, new record or None). A regression is a cell that met its expectation before and
    does not now, or that passed before and now fails in any way (even an expected one:
    someone marked a lost pass XFAIL). Other outcome changes are "changes".
    """
    before = {_key(r): r for r in old["records"]}
    after = {_key(r): r for r in new["records"]}
    out = {"regressions": [], "changes": [], "added": [], "removed": []}
    for k in sorted(set(before) | set(after)):
        o, n = before.get(k), after.get(k)
        if o is None:
            out["added"].append((k, None, n))
        elif n is None:
            out["removed"].append((k, o, None))
        elif (o["outcome"], o["expected"]) != (n["outcome"], n["expected"]):
            lost = (o["expected"] and not n["expected"]) or (o["outcome"] == oc.PASS and n["outcome"] in LOST)
            out["regressions" if lost else "changes"].append((k, o, n))
    return out


def _label(r):
    return "-" if r is None else LABEL[r["outcome"]] + ("" if r["expected"] else "!")


def diff_text(d, reason_width=70):
    """The comparison as text: regressions first, then other changes, added and removed cells."""
    lines = []
    for title, key in (("regressions", "regressions"), ("other changes", "changes"),
                       ("new cells", "added"), ("cells no longer run", "removed")):
        rows = d[key]
        lines.append("%s: %d" % (title, len(rows)))
        for (prog, backend, translate), o, n in rows:
            why = (n or o).get("reason", "")
            lines.append("  %s %s/%s: %s -> %s%s" % (prog, backend, translate, _label(o), _label(n),
                                                     ("  (%s)" % _short(why, reason_width)) if why else ""))
    return "\n".join(lines)


def comparison_html(d, baseline_name):
    """An HTML section listing the changes against a baseline run, regressions first."""
    e = html.escape
    out = ["<h2>Changes since %s</h2>" % e(baseline_name),
           "<p>%d regression(s), %d other change(s), %d new cell(s), %d cell(s) no longer run.</p>" % (
               len(d["regressions"]), len(d["changes"]), len(d["added"]), len(d["removed"])),
           "<table class='changes'><tr><th>kind</th><th>program</th><th>column</th><th>before</th>"
           "<th>now</th><th>reason now</th></tr>"]
    for kind, key in (("regression", "regressions"), ("change", "changes"), ("new", "added"), ("gone", "removed")):
        for (prog, backend, translate), o, n in d[key]:
            colour = "#c62828" if kind == "regression" else "#222"
            out.append("<tr style='color:%s'><td>%s</td><td class='prog'>%s</td><td>%s/%s</td><td>%s</td><td>%s</td>"
                       "<td>%s</td></tr>" % (colour, kind, e(prog), e(backend), e(translate), e(_label(o)),
                                             e(_label(n)), e((n or {}).get("reason", ""))))
    out.append("</table>")
    return "\n".join(out)


# --- joining shards -----------------------------------------------------------------------

class MergeError(ValueError):
    """Shard results that cannot be joined (a cell in two shards, an unreadable file)."""


def merge_docs(docs):
    """Joins shard results into one document; a cell present in two shards is an error."""
    records, seen, columns, suites, shards = [], {}, [], [], []
    for name, doc in docs:
        for r in doc.get("records", []):
            k = _key(r)
            if k in seen:
                raise MergeError("cell %s %s/%s is in both %s and %s" % (k[0], k[1], k[2], seen[k], name))
            seen[k] = name
            records.append(r)
        for c in doc.get("columns", []):
            if list(c) not in columns:
                columns.append(list(c))
        for s in doc.get("suites", []) or []:
            if s not in suites:
                suites.append(s)
        shards.append(doc.get("shard"))
    records.sort(key=_key)
    first_env = docs[0][1].get("environment", {}) if docs else {}
    return {"environment": first_env, "records": records, "columns": columns, "suites": suites,
            "merged_from": [n for n, _ in docs], "shards": shards}


def merge_junit(paths):
    """One JUnit XML document holding every test case of `paths`, sorted, with totals."""
    import xml.etree.ElementTree as ET
    cases = []
    for p in paths:
        try:
            root = ET.parse(p).getroot()
        except (OSError, ET.ParseError) as err:
            raise MergeError("cannot read %s: %s" % (p, err)) from None
        cases.extend(root.iter("testcase"))
    cases.sort(key=lambda c: (c.get("classname", ""), c.get("name", "")))
    suite = ET.Element("testsuite", name="ompsim-matrix")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total = 0.0
    for c in cases:
        counts["tests"] += 1
        counts["failures"] += 1 if c.find("failure") is not None else 0
        counts["errors"] += 1 if c.find("error") is not None else 0
        counts["skipped"] += 1 if c.find("skipped") is not None else 0
        total += float(c.get("time", "0") or 0)
        suite.append(c)
    for k, v in counts.items():
        suite.set(k, str(v))
    suite.set("time", "%.3f" % total)
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode")
