"""`ompsim run --backend NAME -- ./prog [args]`: runs an unmodified clang-22 offload binary on a backend."""
import os
import sys

from ompsim_base import backends


def register(sub):
    p = sub.add_parser("run", help="run an offload program on a backend", description=__doc__,
                       epilog="example: ompsim run --backend sim --trace translate,fault -- ./prog arg1")
    p.add_argument("--backend", default="sim", choices=sorted(backends.BACKENDS))
    p.add_argument("--trace", metavar="CATS", help="set OMPSIM_TRACE (all or a comma list)")
    p.add_argument("--trace-file", metavar="PATH", help="set OMPSIM_TRACE_FILE (JSON lines)")
    p.add_argument("--devices", type=int, metavar="N",
                   help="set OMPSIM_NUM_DEVICES (devices of each of ompsim's backends: sim, sim-ir, "
                        "sim-nvptx, sim-amdgcn, ours-host)")
    p.add_argument("--check", nargs="?", const="1", metavar="strict",
                   help="set OMPSIM_CHECK: the map checker reports mapping bugs, one 'ompsim: check:' line "
                        "each (docs/checker.md), and on a GPU image the GPU checks (docs/gpu-checks.md); "
                        "--check=strict also makes a run that reported anything exit with status 1")
    # "*", checked in main(): `--check ./prog` hands the program to --check's optional value.
    p.add_argument("program", nargs="*", help="-- ./prog [args]")
    p.set_defaults(func=main)


#: The values --check takes; anything else after a bare --check is the program.
CHECK_VALUES = ("1", "strict")


def main(args):
    if args.check is not None and args.check not in CHECK_VALUES:
        args.program = [args.check, *args.program]
        args.check = "1"
    if not args.program or args.program == ["--"]:
        sys.stderr.write("ompsim: run: no program given (ompsim run --backend NAME -- ./prog [args])\n")
        return 2
    why = backends.unavailable_reason(args.backend)
    if why:
        sys.stderr.write("ompsim: backend %s is unavailable: %s\n" % (args.backend, why))
        return 2
    if args.devices is not None and args.backend not in backends.OURS:
        sys.stderr.write("ompsim: run: --devices applies to ompsim's backends (%s), not to %s\n"
                         % (", ".join(sorted(backends.OURS)), args.backend))
        return 2
    if args.devices is not None and args.devices < 1:
        sys.stderr.write("ompsim: run: --devices=%d: expected a number of devices >= 1\n" % args.devices)
        return 2
    if args.check and args.backend not in backends.OURS:
        sys.stderr.write("ompsim: run: --check applies to ompsim's backends (%s), not to %s\n"
                         % (", ".join(sorted(backends.OURS)), args.backend))
        return 2
    env = backends.environment(args.backend)
    if args.check:
        env["OMPSIM_CHECK"] = args.check
    if args.trace:
        env["OMPSIM_TRACE"] = args.trace
    if args.trace_file:
        env["OMPSIM_TRACE_FILE"] = os.path.abspath(args.trace_file)
    if args.devices is not None:
        env["OMPSIM_NUM_DEVICES"] = str(args.devices)
    prog = args.program
    if prog and prog[0] == "--":
        prog = prog[1:]
    try:
        os.execvpe(prog[0], prog, env)  # exit status passes through unchanged
    except OSError as e:
        sys.stderr.write("ompsim: cannot run %s: %s\n" % (prog[0], e.strerror))
        return 127
