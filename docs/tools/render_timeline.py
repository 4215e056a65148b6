#!/usr/bin/python3
"""Draws a timeline exported by `ompsim trace export` (Chrome's Trace Event Format) as a PNG.

Perfetto's UI needs a browser and a network; this draws the same tracks offline with
matplotlib (Debian's python3-matplotlib), for the picture in docs/trace-schema.md:

    /usr/bin/python3 docs/tools/render_timeline.py timeline.json -o docs/images/timeline.png

One row per track (the host process's threads, then each device), complete ("X") events
as bars labelled with their names where they fit, instants ("i") as ticks coloured by
category.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402

#: Colours per event category, so kernels, copies and maps read apart.
COLOURS = {"launch": "#4e79a7", "transfer": "#f28e2b", "map": "#59a14f", "image": "#9c755f",
           "entry": "#bab0ac", "table": "#b07aa1", "translate": "#76b7b2", "fault": "#e15759",
           "alloc": "#edc948"}


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    names, sort = {}, {}
    for ev in events:
        if ev.get("ph") != "M":
            continue
        if ev["name"] == "process_name":
            names[("p", ev["pid"])] = ev["args"]["name"]
        elif ev["name"] == "thread_name":
            names[(ev["pid"], ev["tid"])] = ev["args"]["name"]
        elif ev["name"] == "process_sort_index":
            sort[ev["pid"]] = ev["args"]["sort_index"]
    return [ev for ev in events if ev.get("ph") in ("X", "i")], names, sort


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("timeline", help="JSON written by `ompsim trace export`")
    ap.add_argument("-o", "--output", required=True, help="PNG to write")
    ap.add_argument("--title", default=None)
    args = ap.parse_args(argv)
    events, names, sort = load(args.timeline)
    if not events:
        sys.stderr.write("render_timeline: %s: no slices or instants to draw\n" % args.timeline)
        return 2
    tracks = sorted({(ev["pid"], ev["tid"]) for ev in events}, key=lambda t: (sort.get(t[0], 0), t[0], t[1]))
    row = {t: i for i, t in enumerate(tracks)}
    end = max(ev["ts"] + ev.get("dur", 0) for ev in events) / 1000.0
    fig, ax = plt.subplots(figsize=(13, 1.1 + 0.9 * len(tracks)), dpi=110)
    for ev in events:
        y = row[(ev["pid"], ev["tid"])]
        colour = COLOURS.get(ev.get("cat"), "#888888")
        start = ev["ts"] / 1000.0
        if ev["ph"] == "X":
            width = max(ev["dur"] / 1000.0, end / 600.0)  # a copy of a few microseconds still shows
            ax.broken_barh([(start, width)], (y - 0.32, 0.64), facecolors=colour, edgecolors="black",
                           linewidth=0.4)
            if width > end / 14:
                ax.text(start + width / 2, y, ev["name"], ha="center", va="center", fontsize=7,
                        color="white", clip_on=True)
        else:
            ax.plot([start, start], [y - 0.42, y - 0.2], color=colour, linewidth=1.0)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels(["%s\n%s" % (names.get(("p", p), "pid %d" % p), names.get((p, t), "tid %d" % t))
                        for p, t in tracks], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.01)
    ax.set_xlabel("milliseconds since the first event")
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    ax.legend(handles, list(COLOURS), loc="upper center", bbox_to_anchor=(0.5, -0.35 / max(1, len(tracks) - 1)),
              ncol=len(COLOURS), fontsize=7, frameon=False)
    ax.set_title(args.title or args.timeline, fontsize=10)
    fig.tight_layout()
    fig.savefig(args.output)
    print("%s: %d tracks, %d events" % (args.output, len(tracks), len(events)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
