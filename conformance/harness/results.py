"""Per-cell JSON records: they reach the pytest controller on the test reports (from any
xdist gateway, local or remote), which writes them into one results.json at the end."""
import json
import os
import platform
import subprocess
import time

MERGED = "results.json"


def _version(argv):
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
        return r.stdout.splitlines()[0].strip() if r.stdout else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unavailable"


def environment_info():
    """Versions and host facts shown in the report header."""
    from ompsim_base import paths
    git = _version(["git", "-C", paths.ROOT, "describe", "--always", "--dirty"])
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
            "platform": platform.platform(), "python": platform.python_version(),
            "clang": _version([paths.tool("clang"), "--version"]),
            "flang": _version([paths.tool("flang"), "--version"]), "ompsim": git,
            "build_dir": paths.BUILD}


def record_key(record):
    """A cell's identity across runs: program and column."""
    return (record["program"], record["backend"], record["translate"])


def write(out_root, records, extra=None, path=None):
    """Writes results.json (records sorted by cell) into `out_root`; returns the document."""
    records = sorted(records, key=record_key)
    doc = {"environment": environment_info(), "records": records}
    doc.update(extra or {})
    os.makedirs(out_root, exist_ok=True)
    target = path or os.path.join(out_root, MERGED)
    tmp = target + ".%d.tmp" % os.getpid()
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    os.replace(tmp, target)
    return doc
