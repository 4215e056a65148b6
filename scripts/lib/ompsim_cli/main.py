"""ompsim: a GPU-free OpenMP offload device and conformance harness.

Builds offload programs (cc), runs them on a backend (run), lists what a binary
registers (inspect), reads traces (trace), runs the conformance matrix (matrix)
and the benchmarks (bench), shows or clears the JIT cache of bitcode images (cache),
and checks this machine's toolchain (selfcheck).

example: ompsim cc prog.c -o prog && ompsim run --backend sim -- ./prog
"""
import argparse
import importlib
import signal
import sys

#: subcommand -> module in this package exposing register(subparsers).
COMMANDS = ["cc", "run", "inspect", "trace", "matrix", "bench", "cache", "selfcheck"]


def main(argv):
    # Behave like a Unix tool on a closed pipe (`ompsim trace show t | head`):
    # end quietly instead of a BrokenPipeError traceback. The default action
    # also reaches the programs `ompsim run` and `ompsim cc` exec, which would
    # otherwise inherit Python's "ignore SIGPIPE".
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if argv and argv[0] == "cc":
        # cc passes everything else through to clang untouched; it is what the
        # matrix runs thousands of times, so it does not import the other commands.
        from . import cc
        return cc.main_argv(argv[1:])
    parser = argparse.ArgumentParser(prog="ompsim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        try:
            mod = importlib.import_module("ompsim_cli." + name)
        except ModuleNotFoundError as e:
            if e.name != "ompsim_cli." + name:
                raise
            continue
        mod.register(sub)
    args = parser.parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
