"""Per-cell JSON records: each pytest-xdist worker appends to its own file under
results/<session>/; the controller merges them into one results.json at the end."""
import glob
import json
import os
import platform
import shutil
import subprocess
import time

RESULTS_DIR = "results"
MERGED = "results.json"


def session_dir(out_root, session):
    return os.path.join(out_root, RESULTS_DIR, session)


def append(out_root, session, worker, record):
    """Appends one cell's record to this worker's file of this session."""
    path = os.path.join(session_dir(out_root, session), "%s.jsonl" % worker)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    line = json.dumps(record, sort_keys=True) + "\n"
    # One write per record in append mode: lines from one worker never interleave.
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)


def _version(argv):
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
        return r.stdout.splitlines()[0].strip() if r.stdout else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unavailable"


def environment_info():
    """Versions and host facts shown in the report header."""
    from ompsim_cli import paths
    git = _version(["git", "-C", paths.ROOT, "describe", "--always", "--dirty"])
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
            "platform": platform.platform(), "python": platform.python_version(),
            "clang": _version([paths.tool("clang"), "--version"]),
            "flang": _version([paths.tool("flang"), "--version"]), "ompsim": git,
            "build_dir": paths.BUILD}


def merge(out_root, session, extra=None):
    """Merges every worker's records of `session` into results.json (then drops the
    per-worker files); returns the merged document."""
    records = []
    sdir = session_dir(out_root, session)
    for p in sorted(glob.glob(os.path.join(sdir, "*.jsonl"))):
        with open(p, encoding="utf-8") as f:
            records.extend(json.loads(line) for line in f if line.strip())
    records.sort(key=lambda r: (r["program"], r["backend"], r["translate"]))
    doc = {"environment": environment_info(), "records": records}
    doc.update(extra or {})
    tmp = os.path.join(out_root, MERGED + ".%s.tmp" % session)
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(out_root, MERGED))
    shutil.rmtree(sdir, ignore_errors=True)
    return doc
