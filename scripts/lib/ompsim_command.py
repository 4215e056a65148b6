"""ompsim command line: cc, run, inspect, trace, matrix, bench. See README.

scripts/ompsim runs it with /usr/bin/python3, which it installs first on a Debian that lacks it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from ompsim_cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
