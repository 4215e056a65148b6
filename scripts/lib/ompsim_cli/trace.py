"""`ompsim trace show FILE` and `ompsim trace diff A B`: read JSON-lines traces
(OMPSIM_TRACE_FILE, schema in docs/trace-schema.md)."""
import difflib
import json
import re
import sys

#: The categories of OMPSIM_TRACE (runtime/include/ompsim/Trace.h).
CATEGORIES = ("image", "entry", "map", "table", "launch", "translate", "fault", "alloc", "transfer")

#: Keys the trace writer appends after an event's own fields; they differ between
#: runs and are ignored by `diff`. `pid` and `ts_us` are absent from normalized traces.
ENVELOPE = ("pid", "ts_us", "seq")

#: Fields that identify an event, for aligning two traces; other fields are its payload.
#: Events not listed here are identified by whichever of DEFAULT_KEY_FIELDS they carry.
KEY_FIELDS = {
    ("table", "pair"): ("device", "host"),
    ("entry", "indirect"): ("name",),
    ("entry", "indirect_vtable"): ("name",),
    ("entry", "global"): ("name",),
    ("map", "attach"): ("pointer",),
    ("transfer", "to_device"): ("device", "host", "size"),
    ("transfer", "from_device"): ("device", "host", "size"),
    ("entry", "parse"): ("owner", "index", "name"),
    ("translate", "translate"): ("device", "kernel", "host_ptr"),
    ("translate", "summary"): ("device", "kernel"),
    ("fault", "error"): ("message",),
}
DEFAULT_KEY_FIELDS = ("device", "owner", "index", "name", "image", "kernel", "function", "plugin", "host")

#: Event fields that hold a process id or a raw host address with no symbolized
#: form; `diff` leaves them out unless --raw (they differ between any two runs).
RAW_FIELDS = ("pid", "addr", "rip")
#: A symbolized host address with its raw value: `host:add1+0x0 (0x55d0c4a01190)`.
_HOST_WITH_RAW = re.compile(r"\bhost:(\S+) \(0x[0-9a-fA-F]+\)")
#: A host address without a symbol: raw `host:? (0x7ffd...)`, normalized `host:<./prog>`.
_HOST_UNKNOWN = re.compile(r"\bhost:(?:\?|<[^>]*>)(?: \(0x[0-9a-fA-F]+\))?")


def symbolized(value):
    """A field value with every host address reduced to its symbolized form.

    Raw host addresses differ between two processes under ASLR; the symbol
    (`host:add1+0x0`) is what a normalized trace keeps, so a raw and a
    normalized trace of the same run compare equal.
    """
    if isinstance(value, str):
        return _HOST_UNKNOWN.sub("host:?", _HOST_WITH_RAW.sub(r"host:\1", value))
    if isinstance(value, list):
        return [symbolized(v) for v in value]
    if isinstance(value, dict):
        return {k: symbolized(v) for k, v in value.items()}
    return value


class TraceError(Exception):
    """A trace file that cannot be read; the message names file:line and the problem."""


class Event:
    """One trace line: category, event name, ordered fields, and where it came from."""

    __slots__ = ("cat", "event", "fields", "seq", "envelope", "path", "line")

    def __init__(self, cat, event, fields, envelope, path, line):
        self.cat = cat
        self.event = event
        self.fields = fields  # list of (key, value) in file order
        self.envelope = envelope  # dict of the trailing pid/ts_us/seq keys
        self.seq = envelope.get("seq")
        self.path = path
        self.line = line

    def field(self, key, default=None):
        for k, v in self.fields:
            if k == key:
                return v
        return default

    def where(self):
        return "%s:%d" % (self.path, self.line)

    def key(self, ignore=()):
        """The identity used to align this event with its counterpart in another trace."""
        names = KEY_FIELDS.get((self.cat, self.event))
        if names is None:
            # "device" is a device number in most events but a device address in some
            # (entry indirect, map enter); an address is payload, not identity.
            names = [n for n in DEFAULT_KEY_FIELDS if any(k == n for k, _ in self.fields)
                     and not (n == "device" and isinstance(self.field(n), str))]
        return (self.cat, self.event) + tuple((n, render(self.field(n))) for n in names if n not in ignore)

    def payload(self, ignore=()):
        return {k: render(v) for k, v in self.fields if k not in ignore}

    def describe(self):
        return "%s %s %s" % (self.cat, self.event, " ".join("%s=%s" % (k, render(v)) for k, v in self.fields))


def render(value):
    """A field value as one human token (strings unquoted, JSON otherwise)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True)


class _Pairs(list):
    """A JSON object as its (key, value) pairs, so field order and repeated keys survive."""


def _plain(value):
    """Nested objects as dicts (only the top level keeps its pairs)."""
    if isinstance(value, _Pairs):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def read_trace(path):
    """Parses a JSON-lines trace into Events; raises TraceError naming file:line on bad input."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise TraceError("%s: cannot read: %s" % (path, e.strerror or e))
    except UnicodeDecodeError as e:
        raise TraceError("%s: not a text file (%s)" % (path, e.reason))
    events = []
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        where = "%s:%d" % (path, n)
        if text.startswith("[ompsim "):
            raise TraceError("%s: malformed trace line: human-format trace output, not JSON "
                             "(write traces with OMPSIM_TRACE_FILE)" % where)
        try:
            pairs = json.loads(text.rstrip("\r\n"), object_pairs_hook=_Pairs)
        except json.JSONDecodeError as e:
            raise TraceError("%s: malformed trace line: %s (column %d)" % (where, e.msg, e.colno))
        if not isinstance(pairs, _Pairs):
            raise TraceError("%s: malformed trace line: expected a JSON object, got %s" % (where, type(pairs).__name__))
        if len(pairs) < 2 or pairs[0][0] != "cat" or pairs[1][0] != "event":
            raise TraceError('%s: malformed trace line: an event starts with "cat" and "event"' % where)
        cat, event = pairs[0][1], pairs[1][1]
        if not isinstance(cat, str) or not isinstance(event, str):
            raise TraceError('%s: malformed trace line: "cat" and "event" must be strings' % where)
        fields = [(k, _plain(v)) for k, v in pairs[2:]]
        envelope = {}
        # Only the trailing keys are the writer's; an event may have its own "pid" field.
        while fields and fields[-1][0] in ENVELOPE and fields[-1][0] not in envelope:
            k, v = fields.pop()
            envelope[k] = v
        if "seq" not in envelope:
            raise TraceError('%s: malformed trace line: no "seq" at the end of the event' % where)
        if not isinstance(envelope["seq"], int):
            raise TraceError('%s: malformed trace line: "seq" must be an integer' % where)
        events.append(Event(cat, event, fields, envelope, path, n))
    return events


def parse_categories(text):
    if not text:
        return None
    cats = [c.strip() for c in text.split(",") if c.strip()]
    if "all" in cats:
        return None
    unknown = [c for c in cats if c not in CATEGORIES]
    if unknown:
        raise TraceError("unknown trace category %s (known: all, %s)" % (", ".join(map(repr, unknown)), ", ".join(CATEGORIES)))
    return set(cats)


def function_matcher(name):
    """True for a field value naming `name` as a whole symbol: host:add1+0x0, dev:add1+0x0,
    __omp_offloading_..._add1_l3, Der::f(int); not add10 or padd1."""
    pattern = re.compile(r"(?<![A-Za-z0-9])%s(?![A-Za-z0-9])" % re.escape(name))

    def matches(event):
        return any(isinstance(v, str) and pattern.search(v) for _, v in event.fields)

    return matches


def is_table_row(event):
    """Function-pointer table rows: one event per (host, device) pair."""
    return event.cat == "table" and event.event in ("pair", "fptr-entry")


def format_table(rows):
    """An aligned block for consecutive table rows (same device)."""
    device = rows[0].field("device")
    columns = []
    for ev in rows:
        for k, _ in ev.fields:
            if k != "device" and k not in columns:
                columns.append(k)
    header = ["#"] + columns
    body = [[str(i)] + [render(ev.field(c, "")) for c in columns] for i, ev in enumerate(rows)]
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    title = "function-pointer table%s: %d pair%s" % (
        "" if device is None else ", device %s" % render(device), len(rows), "" if len(rows) == 1 else "s")
    out = ["%6s  %-9s %s" % ("", "table", title)]
    for r in [header] + body:
        out.append("%6s    " % "" + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return out


def show(args):
    try:
        cats = parse_categories(args.cat)
        events = read_trace(args.file)
    except TraceError as e:
        sys.stderr.write("ompsim: %s\n" % e)
        return 2
    keep = [e for e in events if cats is None or e.cat in cats]
    if args.function:
        matches = function_matcher(args.function)
        keep = [e for e in keep if matches(e)]
    width = max([len(e.event) for e in keep] + [5])
    out = []
    i = 0
    while i < len(keep):
        ev = keep[i]
        if is_table_row(ev) and not args.flat:
            j = i
            while j < len(keep) and is_table_row(keep[j]) and keep[j].field("device") == ev.field("device"):
                j += 1
            out.extend(format_table(keep[i:j]))
            i = j
            continue
        fields = " ".join("%s=%s" % (k, render(v)) for k, v in ev.fields)
        out.append(("%6s  %-9s %-*s %s" % (ev.seq, ev.cat, width, ev.event, fields)).rstrip())
        i += 1
    if out:
        sys.stdout.write("\n".join(out) + "\n")
    if not keep:
        sys.stderr.write("ompsim: %s: no events match (%d events in the file)\n" % (args.file, len(events)))
    return 0


def canonical_events(events):
    """Events with host addresses in symbolized form (for a diff that ignores raw values)."""
    return [Event(e.cat, e.event, [(k, symbolized(v)) for k, v in e.fields], e.envelope, e.path, e.line)
            for e in events]


def diff_events(a, b, ignore=()):
    """(removed, added, changed) between two event lists; changed holds (ea, eb, [(field, va, vb)])."""
    ka = [e.key(ignore) for e in a]
    kb = [e.key(ignore) for e in b]
    removed, added, changed = [], [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if op == "equal":
            for ea, eb in zip(a[i1:i2], b[j1:j2]):
                pa, pb = ea.payload(ignore), eb.payload(ignore)
                if pa != pb:
                    names = list(pa) + [k for k in pb if k not in pa]
                    changed.append((ea, eb, [(k, pa.get(k), pb.get(k)) for k in names if pa.get(k) != pb.get(k)]))
        else:
            removed.extend(a[i1:i2])
            added.extend(b[j1:j2])
    return removed, added, changed


def diff(args):
    try:
        a = read_trace(args.a)
        b = read_trace(args.b)
    except TraceError as e:
        sys.stderr.write("ompsim: %s\n" % e)
        return 2
    ignore = set(args.ignore or ())
    if args.raw:
        for path, events in ((args.a, a), (args.b, b)):
            if any("ts_us" in e.envelope or "pid" in e.envelope for e in events):
                sys.stderr.write("ompsim: note: %s is not normalized (set OMPSIM_TRACE_NORMALIZE=1); "
                                 "raw addresses may differ under ASLR\n" % path)
    else:
        a, b = canonical_events(a), canonical_events(b)
        ignore |= set(RAW_FIELDS)
    removed, added, changed = diff_events(a, b, ignore)
    if not (removed or added or changed):
        print("traces are equivalent: %d events" % len(a))
        return 0
    print("--- %s\n+++ %s" % (args.a, args.b))
    # Report in file order so related changes read together.
    items = [(e.line, 0, "- %s: %s" % (e.where(), e.describe())) for e in removed]
    items += [(e.line, 1, "+ %s: %s" % (e.where(), e.describe())) for e in added]
    for ea, eb, fields in changed:
        what = "; ".join("%s: %s -> %s" % (k, "(absent)" if va is None else va, "(absent)" if vb is None else vb)
                         for k, va, vb in fields)
        items.append((ea.line, 2, "~ %s / %s: %s %s: %s" % (ea.where(), eb.where(), ea.cat, ea.event, what)))
    for _, _, text in sorted(items, key=lambda t: (t[0], t[1])):
        print(text)
    print("%d removed, %d added, %d changed" % (len(removed), len(added), len(changed)))
    return 1


def register(sub):
    p = sub.add_parser("trace", help="show or compare JSON-lines traces (OMPSIM_TRACE_FILE)", description=__doc__,
                       epilog="example: ompsim trace diff run1.jsonl run2.jsonl")
    tsub = p.add_subparsers(dest="trace_command", required=True)
    s = tsub.add_parser("show", help="pretty-print a trace, optionally filtered",
                        epilog="example: ompsim trace show --cat table,translate t.jsonl | head")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--cat", metavar="CATS", help="only these categories (comma list: %s)" % ",".join(CATEGORIES))
    s.add_argument("--function", metavar="NAME", help="only events with a field naming function NAME")
    s.add_argument("--flat", action="store_true", help="print function-pointer table rows as plain events")
    s.set_defaults(func=show)
    d = tsub.add_parser("diff", help="semantic diff of two traces (exit 1 if they differ)",
                        description="Compares events by their symbolized addresses (host:f+0x0), ignoring raw "
                                    "host addresses, pids and times, so raw and normalized traces of the same "
                                    "program under ASLR compare equal. --raw compares raw values too.",
                        epilog="example: ompsim trace diff --ignore size run1.jsonl run2.jsonl")
    d.add_argument("a", metavar="A")
    d.add_argument("b", metavar="B")
    d.add_argument("--raw", action="store_true",
                   help="also compare raw host addresses and pid fields (as written)")
    d.add_argument("--ignore", metavar="FIELD", action="append", help="ignore this event field (repeatable)")
    d.set_defaults(func=diff)
