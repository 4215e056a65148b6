"""`ompsim inspect [--json] PROG...`: the device images, offload entries and indirect
functions embedded in a clang offload binary, shared library or object (runs ompsim-inspect).

`ompsim inspect TRACE...`: a trace of a run (OMPSIM_TRACE_FILE) instead: the images,
launches and mappings it shows, then its findings with names: map checker reports,
device faults with the fault advisor's line, errors (inspect_trace.py)."""
import os
import subprocess
import sys

from ompsim_base import paths
from . import inspect_trace

#: The C++ tool doing the work (tools/inspect).
INSPECT = os.path.join(paths.BIN, "ompsim-inspect")


def register(sub):
    p = sub.add_parser("inspect", help="list device images, offload entries and indirect functions of a binary",
                       description=__doc__, epilog="example: ompsim inspect --json ./prog")
    p.add_argument("--json", action="store_true", help="machine-readable output (one JSON document per file)")
    p.add_argument("programs", nargs="+", metavar="PROG",
                   help="host executable, shared library or object; or a JSON-lines trace of a run")
    p.set_defaults(func=main)


def main(args):
    traces = [p for p in args.programs if inspect_trace.is_trace(p)]
    if traces:
        if args.json:
            sys.stderr.write("ompsim: inspect: --json is for programs; a trace is JSON already (%s)\n" % traces[0])
            return 2
        status = 0
        for p in args.programs:
            if p in traces:
                status = max(status, inspect_trace.main([p]))
            else:
                sys.stdout.flush()
                status = max(status, subprocess.call([INSPECT, "--", p]))
        return status
    if not paths.ensure_target("ompsim-inspect", INSPECT):
        sys.stderr.write("ompsim: %s was not built (is tools/inspect in OMPSIM_COMPONENTS?)\n" % INSPECT)
        return 2
    cmd = [INSPECT] + (["--json"] if args.json else []) + ["--"] + args.programs
    sys.stdout.flush()
    os.execv(INSPECT, cmd)  # exit status passes through unchanged
