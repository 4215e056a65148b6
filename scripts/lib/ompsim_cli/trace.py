"""`ompsim trace show FILE`, `ompsim trace diff A B` and `ompsim trace export`: read
JSON-lines traces (OMPSIM_TRACE_FILE, schema in docs/trace-schema.md)."""
import difflib
import json
import re
import sys

#: The categories of OMPSIM_TRACE (runtime/include/ompsim/Trace.h).
CATEGORIES = ("image", "entry", "map", "table", "launch", "translate", "fault", "alloc", "transfer", "check")

#: Keys the trace writer appends after an event's own fields; they differ between
#: runs and are ignored by `diff`. `pid`, `tid` and `ts_us` are absent from normalized traces.
ENVELOPE = ("pid", "tid", "ts_us", "seq")

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
    ("check", "report"): ("check", "name", "region"),
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
        self.envelope = envelope  # dict of the trailing pid/tid/ts_us/seq keys
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


# ---- export: a trace as a timeline (Chrome's Trace Event Format) ------------

#: Process ids of the device tracks: above Linux's largest pid (2^22), so they never
#: collide with the host process's.
DEVICE_PID_BASE = 1 << 24

#: Events that end a device's running kernel (the kernel slice stops there).
KERNEL_ENDERS = {("fault", "device-fault"), ("fault", "timeout"), ("fault", "executor-death")}


def _device_of(event):
    """The device number an event is about, or None (a `device` field may also be an address)."""
    d = event.field("device")
    return d if isinstance(d, int) and not isinstance(d, bool) else None


def _args(event):
    return {k: v for k, v in event.fields}


def _instant_name(event):
    """A short label: the kernel of a launch, the variable of a map event, else `cat event`."""
    for key in ("kernel", "name", "symbol"):
        v = event.field(key)
        if isinstance(v, str) and v:
            return "%s %s %s" % (event.cat, event.event, v)
    return "%s %s" % (event.cat, event.event)


def export_timeline(events, source):
    """The Trace Event Format object ({"traceEvents": [...]}) of a trace's events.

    Tracks: the host process (its pid) with one thread track per writing thread (the
    trace's `tid`), and one process per device (pid DEVICE_PID_BASE + device) whose
    first thread track holds its kernels, transfers, allocations, translations and
    faults (further lanes only where slices overlap, as two host threads launching on
    one device at once). Paired events become complete ("X") slices: a kernel from its
    first `launch` to its `done` (or the fault that ended it), on the device and, as
    "target <kernel>", on the launching thread; a sim copy from the runtime's
    `to_device`/`from_device` to the plugin's `submit`/`retrieve`. Everything else is a
    thread-scoped instant ("i").
    """
    if not events:
        raise TraceError("%s: the trace holds no events" % source)
    timeless = [e for e in events if not isinstance(e.envelope.get("ts_us"), int)]
    if timeless:
        raise TraceError("%s:%d: no time on this event (a trace written with OMPSIM_TRACE_NORMALIZE=1 "
                         "has none): export a trace written without it" % (source, timeless[0].line))
    t0 = min(e.envelope["ts_us"] for e in events)
    host_pid = next((e.envelope["pid"] for e in events if isinstance(e.envelope.get("pid"), int)), 0)
    out = []
    threads = {}  # (pid, tid) -> name
    devices = {}  # device -> {"executor": pid}
    device_slices = {}  # device -> [(start, end, name, cat, args)]
    open_kernels = {}  # (device, kernel) -> dict(start, args, host_track)
    open_copies = {}  # (device, direction) -> (start, args, name, event)

    def host_track(e):
        pid = e.envelope.get("pid", host_pid)
        tid = e.envelope.get("tid", pid)
        if (pid, tid) not in threads:
            threads[(pid, tid)] = "main thread %d" % tid if tid == pid else "host thread %d" % tid
        return pid, tid

    def ts(e):
        return e.envelope["ts_us"] - t0

    def instant(e, track):
        out.append({"name": _instant_name(e), "cat": e.cat, "ph": "i", "s": "t", "ts": ts(e),
                    "pid": track[0], "tid": track[1], "args": _args(e)})

    def close_kernel(key, end, ended_by=None):
        k = open_kernels.pop(key)
        args = dict(k["args"])
        if ended_by:
            args["ended_by"] = ended_by
        device_slices.setdefault(key[0], []).append((k["start"], end, key[1], "launch", args))
        pid, tid = k["host_track"]
        out.append({"name": "target %s" % key[1], "cat": "launch", "ph": "X", "ts": k["start"],
                    "dur": end - k["start"], "pid": pid, "tid": tid, "args": args})

    def flush_copy(key):
        start, args, name, e = open_copies.pop(key)
        instant(e, (DEVICE_PID_BASE + key[0], None))  # lane fixed below

    for e in events:
        dev = _device_of(e)
        if dev is not None:
            devices.setdefault(dev, {})
        if (e.cat, e.event) == ("image", "executor-start") and dev is not None:
            devices[dev]["executor"] = e.field("executor_pid", e.field("pid"))
        if e.cat == "launch" and e.event == "launch" and dev is not None:
            key = (dev, e.field("kernel", ""))
            track = host_track(e)
            if key in open_kernels:
                open_kernels[key]["args"].update(_args(e))  # the plugin's launch event adds its fields
            else:
                open_kernels[key] = {"start": ts(e), "args": _args(e), "host_track": track}
            continue
        if e.cat == "launch" and e.event == "done" and dev is not None:
            key = (dev, e.field("kernel", ""))
            if key in open_kernels:
                close_kernel(key, ts(e))
                continue
        if (e.cat, e.event) in KERNEL_ENDERS and dev is not None:
            for key in [k for k in open_kernels if k[0] == dev]:
                close_kernel(key, ts(e), ended_by="%s %s" % (e.cat, e.event))
        if e.cat == "transfer" and dev is not None:
            direction = {"to_device": "to", "submit": "to", "from_device": "from", "retrieve": "from"}.get(e.event)
            if direction and e.event in ("to_device", "from_device"):
                if (dev, direction) in open_copies:
                    flush_copy((dev, direction))
                name = "HostToDev" if direction == "to" else "DevToHost"
                open_copies[(dev, direction)] = (ts(e), _args(e), "%s %sB" % (name, e.field("size", "?")), e)
                continue
            if direction and (dev, direction) in open_copies:
                start, args, name, _ = open_copies.pop((dev, direction))
                args = dict(args, **{"plugin_" + k: v for k, v in _args(e).items()})
                device_slices.setdefault(dev, []).append((start, ts(e), name, "transfer", args))
                continue
        if dev is not None:
            out.append({"name": _instant_name(e), "cat": e.cat, "ph": "i", "s": "t", "ts": ts(e),
                        "pid": DEVICE_PID_BASE + dev, "tid": None, "args": _args(e)})
        else:
            instant(e, host_track(e))
    end = max(e.envelope["ts_us"] for e in events) - t0
    for key in list(open_kernels):
        close_kernel(key, end, ended_by="end of trace")
    for key in list(open_copies):
        flush_copy(key)

    # Device lanes: slices that overlap go to the next free lane (each lane's slices
    # are disjoint, so every track nests as the format requires).
    lanes_used = {}
    for dev, slices in device_slices.items():
        lane_ends = []
        for start, stop, name, cat, args in sorted(slices, key=lambda s: (s[0], -s[1])):
            lane = next((i for i, last in enumerate(lane_ends) if last <= start), len(lane_ends))
            if lane == len(lane_ends):
                lane_ends.append(stop)
            else:
                lane_ends[lane] = stop
            out.append({"name": name, "cat": cat, "ph": "X", "ts": start, "dur": stop - start,
                        "pid": DEVICE_PID_BASE + dev, "tid": lane + 1, "args": args})
        lanes_used[dev] = max(1, len(lane_ends))
    for ev in out:
        if ev["tid"] is None:
            ev["tid"] = 1  # device instants on the device's first lane
    meta = [{"name": "process_name", "ph": "M", "pid": host_pid, "tid": host_pid,
             "args": {"name": "host process %d" % host_pid}},
            {"name": "process_sort_index", "ph": "M", "pid": host_pid, "tid": host_pid, "args": {"sort_index": 0}}]
    for (pid, tid), name in sorted(threads.items()):
        meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
    for dev in sorted(devices):
        pid = DEVICE_PID_BASE + dev
        executor = devices[dev].get("executor")
        label = "device %d" % dev + (" (executor pid %d)" % executor if isinstance(executor, int) else "")
        meta.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": label}})
        meta.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 1,
                     "args": {"sort_index": dev + 1}})
        for lane in range(lanes_used.get(dev, 1)):
            meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": lane + 1,
                         "args": {"name": "device %d" % dev if lane == 0 else "device %d, lane %d" % (dev, lane + 1)}})
    out.sort(key=lambda ev: (ev["ts"], -ev.get("dur", 0)))
    return {"traceEvents": meta + out, "displayTimeUnit": "ms",
            "otherData": {"source": source, "ompsim_trace_start_us": t0, "events": len(events)}}


def export(args):
    try:
        events = read_trace(args.file)
        timeline = export_timeline(events, args.file)
    except TraceError as e:
        sys.stderr.write("ompsim: %s\n" % e)
        return 2
    text = json.dumps(timeline, indent=None, separators=(",", ":")) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    try:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        sys.stderr.write("ompsim: %s: cannot write: %s\n" % (args.output, e.strerror or e))
        return 2
    slices = sum(1 for ev in timeline["traceEvents"] if ev["ph"] == "X")
    print("%s: %d events as %d slices and %d instants on %d tracks (%s JSON; open it in ui.perfetto.dev "
          "or chrome://tracing)" % (args.output, len(events), slices,
                                   sum(1 for ev in timeline["traceEvents"] if ev["ph"] == "i"),
                                   sum(1 for ev in timeline["traceEvents"] if ev["name"] == "thread_name"),
                                   args.format))
    return 0


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
    x = tsub.add_parser("export", help="write a trace as a timeline for Perfetto or chrome://tracing",
                        description="Writes the trace as Chrome's Trace Event Format (JSON), which Perfetto's "
                                    "JSON importer and chrome://tracing both read: one track per host thread "
                                    "and per device, kernels and copies as slices, other events as instants. "
                                    "perfetto and chrome write the same file. Needs a trace written without "
                                    "OMPSIM_TRACE_NORMALIZE (events carry their times).",
                        epilog="example: ompsim trace export --format=perfetto t.jsonl -o t.json")
    x.add_argument("file", metavar="IN")
    x.add_argument("--format", choices=("perfetto", "chrome"), default="perfetto",
                   help="perfetto (default) or chrome: the same JSON, which both viewers open")
    x.add_argument("-o", "--output", metavar="OUT", required=True, help="the JSON file to write ('-': stdout)")
    x.set_defaults(func=export)
