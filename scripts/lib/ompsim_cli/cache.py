"""`ompsim cache [--clear]`: the JIT cache of bitcode images (`ompsim cc --image=ir`).

The `sim` device keeps the code it compiles from bitcode images in a folder, so
a later run of the same image skips code generation (like CUDA's ComputeCache).
The folder is `$XDG_CACHE_HOME/ompsim/jit` (`~/.cache/ompsim/jit` when
XDG_CACHE_HOME is unset), or OMPSIM_JIT_CACHE; OMPSIM_JIT_CACHE=off turns the
cache off. It holds at most OMPSIM_JIT_CACHE_MAX bytes (256M by default): the
least recently used entries go first.

Shows the folder, its entries, their total size and the cap; `--clear` removes
the entries (only files the JIT wrote: a folder named by OMPSIM_JIT_CACHE may
hold other files, which are left alone).
"""
import os
import re
import sys

#: The cap when OMPSIM_JIT_CACHE_MAX is unset (runtime/support/Config.cpp).
DEFAULT_MAX = 256 << 20
#: The range OMPSIM_JIT_CACHE_MAX must lie in (runtime/support/Config.cpp).
MAX_RANGE = (1 << 10, 1 << 40)
#: Names of the files the JIT writes (simulator/src/JitObjectCache.cpp):
#: entries, and the temporary files they are written to before a rename.
ENTRY = re.compile(r"[0-9a-f]+\.o")
TEMPORARY = re.compile(r"[0-9a-f]+\.o\.[^/]*\.tmp")
_SUFFIXES = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)]


def register(sub):
    import argparse
    p = sub.add_parser("cache", help="show (or --clear) the JIT cache of bitcode images",
                       description=__doc__, epilog="example: ompsim cache --clear",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clear", action="store_true", help="remove every entry of the cache")
    p.set_defaults(func=main)


def folder(env=None):
    """The cache folder the runtime uses under `env` (os.environ by default), or None when off."""
    env = os.environ if env is None else env
    value = env.get("OMPSIM_JIT_CACHE") or ""
    if value:
        return None if value == "off" else value
    xdg = env.get("XDG_CACHE_HOME") or ""
    if xdg.startswith("/"):
        return os.path.join(xdg, "ompsim", "jit")
    home = env.get("HOME") or ""
    return os.path.join(home, ".cache", "ompsim", "jit") if home else None


def parse_size(text):
    """Bytes of a size such as `256M` (suffixes K, M, G, KiB, MiB, GiB), or (None, problem)."""
    digits, mul = text, 1
    for suffix, m in _SUFFIXES:
        if len(text) > len(suffix) and text.endswith(suffix):
            digits, mul = text[:-len(suffix)], m
            break
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", digits):
        n = int(digits, 16)
    elif re.fullmatch(r"[0-9]+", digits):
        n = int(digits)
    else:
        return None, "not a whole non-negative number"
    n *= mul
    if n >= 1 << 64:
        return None, "too large"
    if not MAX_RANGE[0] <= n <= MAX_RANGE[1]:
        return None, "out of range"
    return n, None


def cap(env=None, warn=sys.stderr):
    """The cap in bytes; a bad OMPSIM_JIT_CACHE_MAX is named in one line (as the runtime does) and the default kept."""
    env = os.environ if env is None else env
    value = env.get("OMPSIM_JIT_CACHE_MAX") or ""
    if not value:
        return DEFAULT_MAX
    n, problem = parse_size(value)
    if n is None:
        warn.write("ompsim: ignoring OMPSIM_JIT_CACHE_MAX='%s': %s (expected a size 1K..1024G (suffixes K, M, G))\n"
                   % (value, problem))
        return DEFAULT_MAX
    return n


def entries(path):
    """(name, bytes) of the cache's entries in `path`, sorted by name; [] when the folder is absent."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return []
    out = []
    for name in sorted(names):
        if ENTRY.fullmatch(name):
            try:
                st = os.lstat(os.path.join(path, name))
            except FileNotFoundError:
                continue  # another process evicted it meanwhile
            out.append((name, st.st_size))
    return out


def human(n):
    """`n` bytes in words: exact bytes, with the nearest binary unit beside them from 1 KiB up."""
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return "%d bytes (%.1f %s)" % (n, n / div, unit)
    return "%d bytes" % n


def main(args):
    path = folder()
    if path is None:
        why = "OMPSIM_JIT_CACHE=off" if os.environ.get("OMPSIM_JIT_CACHE") == "off" else "no HOME or XDG_CACHE_HOME"
        print("JIT cache: off (%s)" % why)
        return 0
    limit = cap()
    if os.path.exists(path) and not os.path.isdir(path):
        sys.stderr.write("ompsim: cache: %s is not a folder\n" % path)
        return 1
    try:
        found = entries(path)
    except OSError as e:
        sys.stderr.write("ompsim: cache: cannot read %s: %s\n" % (path, e.strerror or e))
        return 1
    if args.clear:
        removed, failed = 0, None
        for name in os.listdir(path) if os.path.isdir(path) else []:
            if not (ENTRY.fullmatch(name) or TEMPORARY.fullmatch(name)):
                continue
            try:
                os.unlink(os.path.join(path, name))
                removed += ENTRY.fullmatch(name) is not None
            except FileNotFoundError:
                pass
            except OSError as e:
                failed = failed or "%s: %s" % (name, e.strerror or e)
        if failed:
            sys.stderr.write("ompsim: cache: cannot remove entries of %s: %s\n" % (path, failed))
            return 1
        print("JIT cache: %s: removed %d entr%s" % (path, removed, "y" if removed == 1 else "ies"))
        return 0
    total = sum(size for _, size in found)
    print("JIT cache: %s%s" % (path, "" if os.path.isdir(path) else " (not created yet)"))
    print("entries: %d" % len(found))
    print("size: %s" % human(total))
    print("cap: %s (OMPSIM_JIT_CACHE_MAX)" % human(limit))
    return 0
