"""The compile cache (harness/build.py): a cell reuses a build by what went into it (its
source, the project headers it includes, the tools), never by file dates, and the cache
keeps within its limit without taking a build a run may be using."""
import json
import os
import sys

import pytest

from harness import build as builder
from harness import outcome as oc
from harness.runner import Cell, run_cell

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "scripts", "lib"))
from ompsim_base import paths  # noqa: E402


def test_a_files_digest_follows_its_contents_not_its_date(tmp_path):
    tool = tmp_path / "tool"
    tool.write_bytes(b"one")
    first = builder._file_digest(str(tool))
    os.utime(tool, (1, 1))            # a rebuild that rewrote the same bytes
    assert builder._file_digest(str(tool)) == first
    tool.write_bytes(b"two")
    assert builder._file_digest(str(tool)) != first
    assert builder._file_digest(str(tmp_path / "gone")).endswith(":missing")


def test_a_program_is_compiled_again_when_a_header_it_includes_changes(tmp_path, compile_cache):
    if not os.path.exists(paths.PASS_PLUGIN) or not os.path.exists(paths.RUNTIME):
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)
    suite = tmp_path / "plain"
    (suite / "include").mkdir(parents=True)
    (suite / "values.h").write_text('#include "include/value.h"\n')
    (suite / "include" / "value.h").write_text("#define VALUE 7\n")
    (suite / "prog.c").write_text('#include "values.h"\nint main(void) {\n  int x = 0;\n'
                                  "#pragma omp target map(tofrom : x)\n  x = VALUE;\n  return x == 7 ? 0 : 1;\n}\n")

    def run(name):
        work = tmp_path / name
        work.mkdir()
        result, record = run_cell(Cell(str(suite / "prog.c"), "sim", "pass", str(suite)), str(tmp_path / "out"),
                                  str(work))
        return result.code, record["compile"]

    assert run("first") == (oc.PASS, "made")
    assert run("again") == (oc.PASS, "cached")
    # The header two includes down changes what the program computes: a new build.
    (suite / "include" / "value.h").write_text("#define VALUE 8\n")
    assert run("changed") == (oc.FAIL, "made")
    # Back as it was: the first build is still in the cache.
    (suite / "include" / "value.h").write_text("#define VALUE 7\n")
    assert run("restored") == (oc.PASS, "cached")
    assert len([p for p in compile_cache.iterdir() if p.is_dir()]) == 2


def test_sims_two_gpu_columns_share_one_build_with_an_image_for_each(tmp_path, compile_cache):
    # With both columns in the session, sim-nvptx and sim-amdgcn run one binary (an nvptx64 and
    # an amdgcn image), each its own GPU's image: the program says which ran.
    if not os.path.exists(paths.PASS_PLUGIN) or not os.path.exists(paths.RUNTIME):
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)
    suite = tmp_path / "plain"
    suite.mkdir()
    (suite / "prog.c").write_text(
        "int main(void) {\n  int kind = 0;\n#pragma omp target map(from : kind)\n  {\n    int k = 0;\n"
        "#if defined(__NVPTX__)\n    k = 1;\n#elif defined(__AMDGCN__)\n    k = 2;\n#endif\n    kind = k;\n  }\n"
        "  return kind;\n}\n")
    codes = {}
    for backend, made in (("sim-nvptx", "made"), ("sim-amdgcn", "cached")):
        work = tmp_path / backend
        work.mkdir()
        result, record = run_cell(Cell(str(suite / "prog.c"), backend, "pass", str(suite), both_sim_gpus=True),
                                  str(tmp_path / "out"), str(work))
        assert record["compile"] == made, record
        assert "--gpu=sm_90,gfx90a" in record["compile_command"], record["compile_command"]
        codes[backend] = record["exit_code"]
    assert codes == {"sim-nvptx": 1, "sim-amdgcn": 2}
    assert [p.name.split("-")[-2] for p in compile_cache.iterdir() if p.is_dir()] == ["gpus"]


def test_a_build_says_what_ompsim_cc_says_of_a_missing_device_entry_point(tmp_path, compile_cache, monkeypatch):
    # The harness runs ompsim cc's compiler command itself (no Python start a build): the
    # output still ends with ompsim cc's line naming the entry point and the program.
    if not os.path.exists(paths.PASS_PLUGIN) or not os.path.exists(paths.RUNTIME):
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)
    monkeypatch.setenv("TMPDIR", str(tmp_path))     # the failed link leaves the wrapper's files
    suite = tmp_path / "plain"
    suite.mkdir()
    (suite / "calls_missing.c").write_text(
        "void __kmpc_ompsim_not_an_entry_point(void);\nint main(void) {\n  int r = 0;\n"
        "#pragma omp target map(from: r)\n  { __kmpc_ompsim_not_an_entry_point(); r = 1; }\n  return !r;\n}\n")
    work = tmp_path / "work"
    work.mkdir()
    result, record = run_cell(Cell(str(suite / "calls_missing.c"), "sim", "native", str(suite)),
                              str(tmp_path / "out"), str(work))
    assert result.code == oc.COMPILE_ERROR, record
    entry = next(p for p in compile_cache.iterdir() if p.is_dir())
    with open(entry / "build.json") as f:
        built = json.load(f)      # what the compile printed, naming the folder it was made in
    assert built["output"].splitlines()[-1] == "ompsim: cc: %s/prog: device code calls " \
        "__kmpc_ompsim_not_an_entry_point, which ompsim's device runtime (libompsim-device) does not provide" \
        % built["tmp_dir"], built["output"]


def _entry(root, name, size, used):
    entry = root / name
    entry.mkdir(parents=True)
    (entry / "prog").write_bytes(b"x" * size)
    (entry / "build.json").write_text("{}")
    os.utime(entry / "build.json", (used, used))
    return entry


def test_prune_removes_the_least_recently_used_builds_beyond_the_limit(tmp_path):
    now = 1_000_000.0
    day = 24 * 3600
    oldest = _entry(tmp_path, "a-pass-elf-1", 4000, now - 3 * day)
    older = _entry(tmp_path, "b-pass-elf-2", 4000, now - 2 * day)
    newer = _entry(tmp_path, "c-pass-elf-3", 4000, now - day)
    recent = _entry(tmp_path, "d-pass-elf-4", 4000, now - 60)
    # 16 KB held, 9 KB allowed: the two least recently used go, however big the rest.
    removed, freed = builder.prune(str(tmp_path), limit=9000, now=now)
    assert (removed, freed > 8000) == (2, True)
    assert not oldest.exists() and not older.exists() and newer.exists() and recent.exists()
    # A build used in the last hour stays even over the limit: a run may be using it.
    assert builder.prune(str(tmp_path), limit=0, now=now) == (1, 4002)
    assert recent.exists() and not newer.exists()
    # Within the limit nothing goes.
    assert builder.prune(str(tmp_path), limit=10 ** 9, now=now) == (0, 0)


def test_a_lit_compile_of_ompsim_cc_alone_runs_its_compiler_directly_with_the_same_words(tmp_path, compile_cache,
                                                                                         monkeypatch):
    # A lit test's compile step that is one `ompsim cc` command runs what ompsim cc runs,
    # without bash and Python; the output still has ompsim cc's own line after a failed
    # link. A step with shell syntax runs in bash.
    if not os.path.exists(paths.PASS_PLUGIN) or not os.path.exists(paths.RUNTIME):
        pytest.skip("ompsim is not built (%s)" % paths.BUILD)
    assert builder._plain_words("%s cc -O1 'a b.c' -o x" % builder.OMPSIM) == [builder.OMPSIM, "cc", "-O1", "a b.c",
                                                                              "-o", "x"]
    for shell in ("a | b", "a && b", "a > b", "echo $X", "a; b", "a `b`", "a *.c", "a # b"):
        assert builder._plain_words(shell) is None, shell
    source = tmp_path / "calls_missing.c"
    source.write_text(
        "void __kmpc_ompsim_not_an_entry_point(void);\nint main(void) {\n  int r = 0;\n"
        "#pragma omp target map(from: r)\n  { __kmpc_ompsim_not_an_entry_point(); r = 1; }\n  return !r;\n}\n")
    spec = type("Spec", (), {"path": str(source), "name": "calls_missing.c"})()
    out = "%s/Output/prog" % builder.LIT_WORKDIR
    monkeypatch.setenv("TMPDIR", str(tmp_path))     # the failed link leaves the wrapper's files
    env = dict(os.environ)
    built = builder.build_lit(spec, ["%s cc --translate=native --image=elf %s -o %s" % (builder.OMPSIM, source, out)],
                              env)
    (cmd, rc, text), = built.steps
    assert rc != 0
    assert text.splitlines()[-1] == "ompsim: cc: %s/Output/prog: device code calls __kmpc_ompsim_not_an_entry_" \
        "point, which ompsim's device runtime (libompsim-device) does not provide" % built.directory, text
    piped = builder.build_lit(spec, ["echo built | tr a-z A-Z > %s.txt" % out], env)
    assert [s[1] for s in piped.steps] == [0]
    assert open(os.path.join(piped.directory, "Output", "prog.txt")).read() == "BUILT\n"
