"""`ompsim inspect TRACE`: what a traced run did and what went wrong in it.

A trace (OMPSIM_TRACE_FILE, JSON lines) of a whole run is thousands of events;
this prints the run's shape and its findings with the names the events carry:
the images loaded per device, the kernels launched (with counts), the mappings
made, and then every finding, each once: map checker reports (`check`), device
faults with the fault advisor's line, and the runtime's error lines.
"""
import collections
import sys

from .trace import TraceError, read_trace, render

#: A run's findings, in the order they are printed: (category, event) -> heading.
FINDINGS = (
    (("check", "report"), "map checker reports"),
    (("fault", "data-fault"), "data faults"),
    (("fault", "executor-death"), "device deaths"),
    (("fault", "timeout"), "kernel timeouts"),
    (("fault", "error"), "errors"),
)


def is_trace(path):
    """True when `path` reads as a JSON-lines trace (its first non-blank byte opens an object)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    text = head.lstrip()
    return text.startswith(b'{"cat"')


def _finding_line(event):
    """One finding as a line: its message (a check report's names the item, construct and fix)."""
    message = event.field("message")
    if message is not None:
        return render(message)
    return " ".join("%s=%s" % (k, render(v)) for k, v in event.fields)


def summarize(path):
    """The summary of the trace at `path` as lines; raises TraceError on a bad file."""
    events = read_trace(path)
    out = ["%s: a trace of %d events" % (path, len(events))]
    images = collections.OrderedDict()
    launches = collections.Counter()
    maps = collections.Counter()
    for e in events:
        if (e.cat, e.event) == ("image", "load") and e.field("plugin") is not None:
            images.setdefault(e.field("device"), []).append(e.field("image"))
        elif (e.cat, e.event) == ("launch", "launch") and e.field("entry") is None:
            launches[(e.field("device"), e.field("kernel"))] += 1
        elif (e.cat, e.event) == ("map", "enter") and e.field("new") == 1:
            maps[e.field("name") or "(unnamed)"] += 1
    for device, names in images.items():
        out.append("  device %s: %d image%s loaded: %s" % (device, len(names), "" if len(names) == 1 else "s",
                                                         ", ".join(str(n) for n in names)))
    if launches:
        out.append("  launches (%d):" % sum(launches.values()))
        for (device, kernel), n in sorted(launches.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
            out.append("    device %s: %s x%d" % (device, kernel, n))
    if maps:
        out.append("  mappings created (%d): %s" % (sum(maps.values()), ", ".join(
            "%s x%d" % (name, n) if n > 1 else name for name, n in maps.items())))
    found = 0
    for key, heading in FINDINGS:
        seen = []
        for e in events:
            if (e.cat, e.event) == key:
                line = _finding_line(e)
                if line not in seen:
                    seen.append(line)
        if seen:
            found += len(seen)
            out.append("  %s (%d):" % (heading, len(seen)))
            out.extend("    " + line for line in seen)
    if not found:
        out.append("  no findings (no check reports, faults or errors in the trace)")
    return out


def main(paths):
    """Prints each trace's summary; 2 when a file cannot be read as a trace."""
    status = 0
    for path in paths:
        try:
            print("\n".join(summarize(path)))
        except TraceError as e:
            sys.stdout.flush()
            sys.stderr.write("ompsim: %s\n" % e)
            status = 2
    return status
