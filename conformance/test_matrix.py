"""The conformance matrix: each cell compiles (cached) and runs one program on one backend."""
import platform

import pytest

from harness import outcome as oc
from harness.runner import run_cell


def _worker(request):
    wi = getattr(request.config, "workerinput", None)
    return wi["workerid"] if wi else "main"


def test_program(cell, conformance_out, tmp_path, request):
    result, record = run_cell(cell, conformance_out, str(tmp_path))
    record.update(worker=_worker(request), host=platform.node())
    # The controller collects it from the report (conftest.py), wherever this worker runs.
    request.node.conformance_record = record
    request.node.user_properties.append(("outcome", result.code))
    request.node.user_properties.append(("reason", result.reason))
    text = "%s: %s" % (result.code, result.reason) if result.reason else result.code
    if result.code == oc.PASS:
        return
    if result.skipped:
        pytest.skip(text)
    if result.expected:
        pytest.xfail(text)
    pytest.fail(text + _details(record), pytrace=False)


def _details(record):
    parts = []
    if record.get("compile_command"):
        parts.append("compile: " + record["compile_command"])
    if record.get("stdout_tail"):
        parts.append("stdout:\n" + record["stdout_tail"][-800:])
    if record.get("stderr_tail"):
        parts.append("stderr:\n" + record["stderr_tail"][-800:])
    return ("\n" + "\n".join(parts)) if parts else ""
