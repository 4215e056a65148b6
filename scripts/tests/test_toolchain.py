"""Every compile ompsim runs uses LLVM 22's tools, whatever else is on PATH, and a
missing tool is named with the Debian package that provides it."""
import os
import re
import subprocess
import types

import pytest

from ompsim_base import backends, paths, toolchain
from ompsim_cli import selfcheck

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")

PROGRAM = open(os.path.join(os.path.dirname(__file__), "programs", "add1_indirect.c")).read()


def fake_llvm(folder, marker):
    """Unversioned clang, clang++ and lld of 'another version' that record being run and fail."""
    folder.mkdir()
    for name in ("clang", "clang++", "ld.lld", "lld", "clang-linker-wrapper"):
        p = folder / name
        p.write_text("#!/bin/sh\necho \"$0 $*\" >> %s\necho 'clang version 14.0.6' >&2\nexit 1\n" % marker)
        p.chmod(0o755)


def device_link_commands(output):
    """The device-link compiler commands clang-linker-wrapper printed (-v)."""
    return [line for line in output.splitlines()
            if re.match(r'\s*"?\S*clang"? --no-default-config', line) or " --no-default-config " in line]


@pytest.mark.e2e
@pytest.mark.parametrize("image", ["elf", "ir"])
def test_device_link_runs_clang22_with_another_clang_first_on_path(tmp_path, image):
    marker = tmp_path / "ran-fake-tool"
    fake_llvm(tmp_path / "fake-bin", marker)
    (tmp_path / "p.c").write_text(PROGRAM)
    env = dict(os.environ, PATH="%s:%s" % (tmp_path / "fake-bin", os.environ.get("PATH", "/usr/bin:/bin")))
    r = subprocess.run([OMPSIM, "cc", "--image=" + image, "-v", "p.c", "-o", "p"], cwd=tmp_path, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0, r.stdout
    assert not marker.exists(), "a tool from PATH ran: " + marker.read_text()
    links = device_link_commands(r.stdout)
    assert links, "no device link in the -v output:\n" + r.stdout[-3000:]
    for line in links:
        assert line.lstrip().strip('"').startswith(toolchain.LLVM_BIN + "/clang"), line
    run = subprocess.run([str(tmp_path / "p")], env=backends.environment("sim-ir" if image == "ir" else "sim"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "42", run.stdout


def test_environment_puts_llvm22_first_once():
    env = toolchain.environment({"PATH": "/tmp/x:%s:/usr/bin" % toolchain.LLVM_BIN})
    assert env["PATH"].split(":") == [toolchain.LLVM_BIN, "/tmp/x", "/usr/bin"]


def test_undeclared_tool_is_an_error():
    undeclared = "gcc"
    with pytest.raises(KeyError, match="not declared"):
        paths.tool(undeclared)


def test_selfcheck_names_the_missing_tool_and_its_package(tmp_path, monkeypatch, capsys):
    # A copy of LLVM 22's bin folder without clang-linker-wrapper, as on a machine
    # that lacks clang-tools-22.
    partial = tmp_path / "llvm-bin"
    partial.mkdir()
    for name in os.listdir(toolchain.LLVM_BIN):
        if name != "clang-linker-wrapper":
            os.symlink(os.path.join(toolchain.LLVM_BIN, name), partial / name)
    monkeypatch.setattr(toolchain, "LLVM_BIN", str(partial))
    rc = selfcheck.main(types.SimpleNamespace(force=True, verbose=False))
    err = capsys.readouterr().err.splitlines()
    assert rc == 1
    assert err == ["ompsim: missing tool clang-linker-wrapper (the offload link clang-22 runs): "
                   "install the Debian package clang-tools-22"]


@pytest.mark.e2e
def test_selfcheck_runs_every_language_image_and_backend(tmp_path, monkeypatch, capsys):
    # A fresh stamp folder, so the check really runs.
    monkeypatch.setattr(selfcheck, "_stamp_file", lambda: str(tmp_path / "selfcheck.json"))
    rc = selfcheck.main(types.SimpleNamespace(force=True, verbose=True))
    out = capsys.readouterr().out
    cells = list(selfcheck.cells())
    assert rc == 0, out
    assert "%d passed, 0 failed" % len(cells) in out
    for lang, _, _, image, backend in cells:
        assert "%s %s image on %s: ok" % (lang, image, backend) in out
    assert {c[0] for c in cells} == {"C", "C++", "Fortran"}
    assert {c[4] for c in cells} == {"sim", "sim-ir", "ours-host", "host-upstream", "sim-nvptx"}
    # One GPU program, which needs no CUDA (issue: nvptx builds used to read CUDA's PTX version).
    assert ("C", "sm_90", "sim-nvptx") in {(c[0], c[3], c[4]) for c in cells}
