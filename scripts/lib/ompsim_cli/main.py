"""Dispatches `ompsim <command>` to the module implementing it."""
import argparse
import importlib
import sys

#: subcommand -> module in this package exposing register(subparsers).
COMMANDS = ["cc", "run", "inspect", "trace", "matrix", "bench", "selfcheck"]


def main(argv):
    parser = argparse.ArgumentParser(prog="ompsim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        try:
            mod = importlib.import_module("ompsim_cli." + name)
        except ModuleNotFoundError as e:
            if e.name != "ompsim_cli." + name:
                raise
            continue
        mod.register(sub)
    if argv and argv[0] == "cc":
        # cc passes everything else through to clang untouched.
        from . import cc
        return cc.main_argv(argv[1:])
    args = parser.parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
