"""A checker of Chrome's Trace Event Format (the JSON that chrome://tracing and Perfetto's
JSON importer read), as its specification states the rules the tests rely on.

Checked: the JSON Object Format (`traceEvents` array; `displayTimeUnit` "ms" or "ns" if
present) or the JSON Array Format; every event an object with a string `name`, a known
one-letter `ph`, integer `pid` and `tid`, and a numeric `ts` (metadata events may omit
it); `cat` a string and `args` an object when present; complete events ("X") with a
numeric `dur` >= 0; instants ("i"/"I") with scope `s` in g/p/t when present; metadata
("M") events naming a process or thread (`args.name` a string) or a sort index
(`args.sort_index` an integer). Complete events of one thread must nest (Perfetto drops
overlapping ones: "events are only allowed to perfectly nest").
"""
import numbers

#: The phases of the specification.
PHASES = set("BEXiICbneSTpFsftPNODMVvRc()")
METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index", "process_labels"}


def _number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _integer(v):
    return isinstance(v, int) and not isinstance(v, bool)


def problems(data, nest_slack_us=0):
    """The rule violations of `data` (parsed JSON), as readable strings; [] when it is valid.

    `nest_slack_us`: how far a child may end past its parent (LLVM's profiler rounds start
    and duration to microseconds separately).
    """
    out = []
    if isinstance(data, dict):
        events = data.get("traceEvents")
        if not isinstance(events, list):
            return ["the object has no traceEvents array"]
        if "displayTimeUnit" in data and data["displayTimeUnit"] not in ("ms", "ns"):
            out.append("displayTimeUnit %r is neither ms nor ns" % data["displayTimeUnit"])
    elif isinstance(data, list):
        events = data
    else:
        return ["neither an object nor an array of events"]
    slices = {}
    for i, ev in enumerate(events):
        where = "event %d (%s)" % (i, ev.get("name") if isinstance(ev, dict) else ev)
        if not isinstance(ev, dict):
            out.append("%s: not an object" % where)
            continue
        ph = ev.get("ph")
        if not isinstance(ph, str) or ph not in PHASES:
            out.append("%s: ph %r is not a phase of the format" % (where, ph))
            continue
        if not isinstance(ev.get("name"), str):
            out.append("%s: name is not a string" % where)
        for key in ("pid", "tid"):
            if not _integer(ev.get(key)):
                out.append("%s: %s %r is not an integer" % (where, key, ev.get(key)))
        if ph != "M" and not _number(ev.get("ts")):
            out.append("%s: ts %r is not a number" % (where, ev.get("ts")))
        if "cat" in ev and not isinstance(ev["cat"], str):
            out.append("%s: cat is not a string" % where)
        if "args" in ev and not isinstance(ev["args"], dict):
            out.append("%s: args is not an object" % where)
        if ph == "X":
            if not _number(ev.get("dur")) or ev["dur"] < 0:
                out.append("%s: complete event without a duration >= 0 (dur %r)" % (where, ev.get("dur")))
            else:
                slices.setdefault((ev.get("pid"), ev.get("tid")), []).append((ev["ts"], ev["dur"], where))
        if ph in ("i", "I") and "s" in ev and ev["s"] not in ("g", "p", "t"):
            out.append("%s: instant scope %r is not g, p or t" % (where, ev["s"]))
        if ph == "M":
            args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
            if ev.get("name") not in METADATA:
                out.append("%s: unknown metadata event" % where)
            elif ev["name"].endswith("_name") and not isinstance(args.get("name"), str):
                out.append("%s: %s without args.name" % (where, ev["name"]))
            elif ev["name"].endswith("_sort_index") and not _integer(args.get("sort_index")):
                out.append("%s: %s without an integer args.sort_index" % (where, ev["name"]))
    for track, items in slices.items():
        stack = []
        for ts, dur, where in sorted(items, key=lambda s: (s[0], -s[1])):
            while stack and ts >= stack[-1][0] + stack[-1][1]:
                stack.pop()
            if stack and ts + dur > stack[-1][0] + stack[-1][1] + nest_slack_us:
                out.append("track %s: %s overlaps %s without nesting" % (track, where, stack[-1][2]))
            stack.append((ts, dur, where))
    return out


def complete_events(data):
    """The complete ("X") events of a parsed trace."""
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [ev for ev in events if ev.get("ph") == "X"]
