"""Runs one matrix cell (program x backend x translation) end to end and classifies it."""
import dataclasses
import os
import signal
import subprocess
import time

from ompsim_cli import backends, paths

from . import build as builder
from . import outcome as oc
from .features import backend_features
from .header import HeaderError, parse_file

DEFAULT_TIMEOUT = 60
FILECHECK = paths.tool("FileCheck")


@dataclasses.dataclass
class Cell:
    """One matrix cell; `id` is the pytest id."""
    program: str   # path
    backend: str
    translate: str

    @property
    def name(self):
        return os.path.splitext(os.path.basename(self.program))[0]

    @property
    def id(self):
        return "%s-%s-%s" % (self.backend, self.translate, self.name)


def filecheck(source, prefix, text):
    """Runs FileCheck-22 with `prefix` from `source` over `text`; None when it matches."""
    r = subprocess.run([FILECHECK, source, "--check-prefix=" + prefix, "--dump-input=never"],
                       input=text, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if r.returncode == 0:
        return None
    lines = [ln.strip() for ln in r.stdout.splitlines() if "error:" in ln]
    return lines[0].split("error:", 1)[1].strip() if lines else r.stdout.strip()[:200]


def execute(argv, env, cwd, timeout):
    """Runs argv in its own process group; on timeout kills the whole group (executors included)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=cwd, start_new_session=True, errors="replace")
    try:
        out, err = proc.communicate(timeout=timeout)
        return oc.RunResult(proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return oc.RunResult(-signal.SIGKILL, out, err, timed_out=True)


def run_cell(cell, out_root, workdir):
    """Returns (Outcome, record dict) for `cell`; never raises for anything a program can cause."""
    start = time.monotonic()
    record = {"program": cell.name, "backend": cell.backend, "translate": cell.translate,
              "image": backends.image_kind(cell.backend), "checks": "", "xfail_reasons": [],
              "compile_command": "", "exit_code": None, "stdout_tail": "", "stderr_tail": ""}
    result = _run(cell, out_root, workdir, record)
    record.update(outcome=result.code, expected=result.expected, reason=result.reason,
                  compiler_message=result.compiler_message, duration=round(time.monotonic() - start, 3))
    return result, record


def _run(cell, out_root, workdir, record):
    try:
        spec = parse_file(cell.program)
    except HeaderError as e:
        return oc.Outcome(oc.UNRESOLVED, "malformed header: %s" % e, False)
    record["checks"] = spec.checks
    record["xfail_reasons"] = [e.reason for e in spec.xfail + spec.xfail_compile + spec.expect_fail_if]
    why = backends.unavailable_reason(cell.backend)
    if why:
        return oc.Outcome(oc.UNAVAILABLE, why, True)
    image = builder.build_image(cell.backend, backends.image_kind(cell.backend))
    prefix, device_runtime, why = builder.toolchain(spec.language, cell.translate, image)
    if why:
        return oc.Outcome(oc.UNAVAILABLE, why, True)
    features = backend_features(cell.backend, cell.translate, spec.language, device_runtime)
    pre = oc.classify_preconditions(spec, features)
    if pre:
        return pre
    b, why = builder.build(spec, cell.translate, image, out_root)
    if why:
        return oc.Outcome(oc.UNAVAILABLE, why, True)
    record["compile_command"] = b.command
    after_build = oc.classify_build(spec, features, b.ok, b.output)
    if after_build:
        return after_build
    source_dir = os.path.dirname(os.path.abspath(spec.path))
    env = backends.environment(cell.backend)
    for k, v in spec.env.items():
        env[k] = builder.substitute(v, source_dir, b.directory)
    args = [builder.substitute(a, source_dir, b.directory) for a in spec.args]
    run = execute([b.exe, *args], env, workdir, spec.timeout or DEFAULT_TIMEOUT)
    record["exit_code"] = run.exit_code
    record["stdout_tail"] = run.stdout[-2000:]
    record["stderr_tail"] = run.stderr[-2000:]
    return oc.classify_run(spec, features, run, lambda prefix, text: filecheck(spec.path, prefix, text))
