"""ompsim's libomptarget exports every name of the installed stock libomptarget 22, with its version node.

The stock list is read from the installed library at test time, so a newer
stock build that adds a name makes this test fail until ompsim has it too.
"""
import os
import re
import shutil
import subprocess

import pytest

from ompsim_base import paths

STOCK = os.path.join(paths.LLVM_LIB, "libomptarget.so.22.1")

# "0000000000049be0 T __tgt_register_lib@@VERS1.0"; the version part is
# absent for an unversioned symbol.
_LINE = re.compile(r"^\S*\s+(\S)\s+([^@\s]+)(?:@@?(\S+))?$")


def exported(lib):
    """{name: version node or None} of the symbols `lib` defines in its dynamic table."""
    r = subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, check=True)
    out = {}
    for line in r.stdout.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        kind, name, version = m.groups()
        # The version node itself is an absolute symbol named after it.
        if kind == "A" and name == version:
            continue
        out[name] = version
    return out


@pytest.fixture(scope="module")
def stock():
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) not installed")
    if not os.path.exists(STOCK):
        pytest.skip("stock libomptarget not installed at %s" % STOCK)
    names = exported(STOCK)
    # A parse that finds nothing would make the comparison vacuous.
    assert "__tgt_register_lib" in names, "cannot read the export list of %s" % STOCK
    return names


def test_every_stock_name_is_exported_with_its_version(stock):
    assert os.path.exists(paths.RUNTIME), "ompsim runtime not built: %s" % paths.RUNTIME
    ours = exported(paths.RUNTIME)
    missing = sorted(n for n in stock if n not in ours)
    wrong = sorted("%s (stock %s, ours %s)" % (n, stock[n], ours[n])
                   for n in stock if n in ours and ours[n] != stock[n])
    assert not missing and not wrong, (
        "%d of %d stock names missing from %s:\n  %s\nwith another version node:\n  %s" % (
            len(missing), len(stock), paths.RUNTIME, "\n  ".join(missing) or "-",
            "\n  ".join(wrong) or "-"))
