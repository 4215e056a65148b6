"""`ompsim inspect [--json] PROG...`: the device images, offload entries and indirect
functions embedded in a clang offload binary, shared library or object (runs ompsim-inspect)."""
import os
import sys

from . import paths

#: The C++ tool doing the work (tools/inspect).
INSPECT = os.path.join(paths.BIN, "ompsim-inspect")


def register(sub):
    p = sub.add_parser("inspect", help="list device images, offload entries and indirect functions of a binary",
                       description=__doc__, epilog="example: ompsim inspect --json ./prog")
    p.add_argument("--json", action="store_true", help="machine-readable output (one JSON document per file)")
    p.add_argument("programs", nargs="+", metavar="PROG", help="host executable, shared library or object")
    p.set_defaults(func=main)


def main(args):
    if not os.path.exists(INSPECT):
        paths.ensure_built()
        if not os.path.exists(INSPECT):
            sys.stderr.write("ompsim: %s was not built (is tools/inspect in OMPSIM_COMPONENTS?)\n" % INSPECT)
            return 2
    cmd = [INSPECT] + (["--json"] if args.json else []) + ["--"] + args.programs
    sys.stdout.flush()
    os.execv(INSPECT, cmd)  # exit status passes through unchanged
