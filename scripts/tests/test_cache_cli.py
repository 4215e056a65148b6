"""`ompsim cache [--clear]`: the JIT cache's folder, entries, size and cap, and clearing it.

The CLI finds the folder as the runtime does (OMPSIM_JIT_CACHE, XDG_CACHE_HOME,
HOME): the first test fills it with a real run of a bitcode image on `sim`.
"""
import os
import subprocess

from ompsim_base import backends, paths

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")

PROGRAM = r"""
#include <stdio.h>
#pragma omp declare target
int twice(int x) { return 2 * x; }
#pragma omp end declare target
int main(void) {
  int s = 21;
#pragma omp target map(tofrom : s)
  { s = twice(s); }
  printf("s=%d\n", s);
  return s != 42;
}
"""


def ompsim_cache(env, *args):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OMPSIM_JIT_CACHE", "XDG_CACHE_HOME"))}
    e.update(env)
    return subprocess.run([OMPSIM, "cache", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=e, timeout=120)


def fields(out):
    return dict(line.split(": ", 1) for line in out.splitlines())


def fake_entries(folder, sizes):
    folder.mkdir(parents=True, exist_ok=True)
    for i, size in enumerate(sizes):
        (folder / ("%064x.o" % (i + 1))).write_bytes(b"\0" * size)


def test_a_real_run_fills_the_folder_the_cli_shows(offload, tmp_path):
    exe = offload.compile(PROGRAM, name="twice.c", translate="pass", image="ir")
    xdg = tmp_path / "xdg"
    r = offload.run(exe, backend="sim", env={"XDG_CACHE_HOME": str(xdg)})
    assert r.returncode == 0 and "s=42" in r.stdout, r.stdout + r.stderr
    folder = xdg / "ompsim" / "jit"
    files = [p for p in folder.iterdir()]
    assert files
    r = ompsim_cache({"XDG_CACHE_HOME": str(xdg)})
    assert r.returncode == 0, r.stderr
    f = fields(r.stdout)
    assert f["JIT cache"] == str(folder)
    assert f["entries"] == str(len(files))
    assert f["size"].startswith("%d bytes" % sum(p.stat().st_size for p in files)), f
    assert f["cap"] == "268435456 bytes (256.0 MiB) (OMPSIM_JIT_CACHE_MAX)"
    r = ompsim_cache({"XDG_CACHE_HOME": str(xdg)}, "--clear")
    assert r.returncode == 0 and "removed %d entr" % len(files) in r.stdout, r.stdout + r.stderr
    assert list(folder.iterdir()) == []
    assert fields(ompsim_cache({"XDG_CACHE_HOME": str(xdg)}).stdout)["entries"] == "0"


def test_home_is_used_without_xdg_cache_home_and_the_cap_follows_its_variable(tmp_path):
    folder = tmp_path / ".cache" / "ompsim" / "jit"
    fake_entries(folder, [1000, 2000, 48])
    r = ompsim_cache({"HOME": str(tmp_path), "OMPSIM_JIT_CACHE_MAX": "64K"})
    assert r.returncode == 0, r.stderr
    assert fields(r.stdout) == {"JIT cache": str(folder), "entries": "3", "size": "3048 bytes (3.0 KiB)",
                                "cap": "65536 bytes (64.0 KiB) (OMPSIM_JIT_CACHE_MAX)"}


def test_clear_removes_entries_and_leftovers_but_no_other_file(tmp_path):
    folder = tmp_path / "mine"
    fake_entries(folder, [10, 20])
    (folder / ("%064x.o.Ab12Cd.tmp" % 7)).write_bytes(b"partial")
    (folder / "notes.txt").write_text("the user's own file\n")
    (folder / "sub").mkdir()
    r = ompsim_cache({"OMPSIM_JIT_CACHE": str(folder)}, "--clear")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "JIT cache: %s: removed 2 entries\n" % folder
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "sub"]


def test_off_and_a_missing_folder_are_said_as_such(tmp_path):
    r = ompsim_cache({"OMPSIM_JIT_CACHE": "off"})
    assert (r.returncode, r.stdout) == (0, "JIT cache: off (OMPSIM_JIT_CACHE=off)\n"), r.stderr
    r = ompsim_cache({"OMPSIM_JIT_CACHE": "off"}, "--clear")
    assert (r.returncode, r.stdout) == (0, "JIT cache: off (OMPSIM_JIT_CACHE=off)\n"), r.stderr
    r = ompsim_cache({"OMPSIM_JIT_CACHE": str(tmp_path / "never")})
    assert r.returncode == 0, r.stderr
    assert fields(r.stdout)["JIT cache"] == "%s (not created yet)" % (tmp_path / "never")
    assert fields(r.stdout)["entries"] == "0"
    assert not (tmp_path / "never").exists()


def test_a_bad_cap_is_named_in_one_line_and_a_file_in_place_of_the_folder_fails(tmp_path):
    r = ompsim_cache({"OMPSIM_JIT_CACHE": str(tmp_path), "OMPSIM_JIT_CACHE_MAX": "12Q"})
    assert r.returncode == 0
    assert r.stderr == ("ompsim: ignoring OMPSIM_JIT_CACHE_MAX='12Q': not a whole non-negative number "
                        "(expected a size 1K..1024G (suffixes K, M, G))\n")
    assert fields(r.stdout)["cap"].startswith("268435456 bytes")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = ompsim_cache({"OMPSIM_JIT_CACHE": str(blocker)})
    assert r.returncode == 1 and r.stderr == "ompsim: cache: %s is not a folder\n" % blocker, r.stderr
