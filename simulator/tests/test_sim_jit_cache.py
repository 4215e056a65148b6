"""The JIT cache of bitcode images: on by default, capped, shared by concurrent runs.

A bitcode image's compiled code is kept in `$XDG_CACHE_HOME/ompsim/jit` (or
`~/.cache/ompsim/jit`) unless OMPSIM_JIT_CACHE names another folder or is
`off`; OMPSIM_JIT_CACHE_MAX caps it. A folder that cannot be used costs one
warning line and never the run. Every program here checks its own results.
"""
import os
import re
import shutil
import subprocess

import pytest

from ompsim_base import backends
from ompsim_cli import cache

#: A kernel, 24 functions it calls and one indirect function: a few objects in the cache.
PROGRAM = r"""
#include <stdio.h>
#include <stdint.h>
extern void *__kmpc_target_translate_fptr(void *host_ptr);
#pragma omp declare target
%s
int ind(int x) { return x + 5; }
#pragma omp end declare target
#pragma omp declare target to(ind) indirect
int main(void) {
  int (*fp)(int) = ind;
  int s = 1, same = 0, via = 0;
  uintptr_t dev = 0;
#pragma omp target map(tofrom : s, same, via, dev)
  {
%s
    same = __kmpc_target_translate_fptr((void *)fp) == (void *)&ind;
    via = fp(1);
    dev = (uintptr_t)&ind;
  }
  int want = 1;
  for (int i = 0; i < %d; ++i) want = (want * (i %% %d + 2) + i) & 0xffff;
  int bad = (s != want) + (same != 1) + (via != 6);
  printf("s=%%d mismatches=%%d ind=%%#lx\n", s, bad, (unsigned long)dev);
  return bad != 0;
}
"""


def program(n=24, mod=5):
    fns = "\n".join("__attribute__((noinline)) int g%d(int x) { return x * %d + %d; }" % (i, i % mod + 2, i)
                    for i in range(n))
    calls = "\n".join("    s = g%d(s) & 0xffff;" % i for i in range(n))
    return PROGRAM % (fns, calls, n, mod)


def entries(folder):
    return sorted(p.name for p in folder.iterdir() if cache.ENTRY.fullmatch(p.name)) if folder.is_dir() else []


def ompsim_lines(r):
    return [l for l in r.stderr.splitlines() if l.startswith("ompsim")]


def run_ok(offload, exe, env, args=()):
    r = offload.run(exe, backend="sim", env=env, args=args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mismatches=0" in r.stdout, r.stdout
    return r


@pytest.fixture
def exe(offload):
    return offload.compile(program(), name="cached.c", translate="pass", image="ir")


def test_the_cache_is_on_by_default_under_xdg_cache_home(offload, exe):
    xdg = offload.tmp / "xdg"
    run_ok(offload, exe, {"XDG_CACHE_HOME": str(xdg)})
    assert entries(xdg / "ompsim" / "jit"), list(xdg.rglob("*"))


@pytest.mark.parametrize("xdg", [None, "", "relative/cache"], ids=["unset", "empty", "relative"])
def test_without_an_absolute_xdg_cache_home_the_cache_is_under_home(offload, exe, xdg):
    home = offload.tmp / "home"
    home.mkdir()
    env = dict(backends.environment("sim"), HOME=str(home))
    env.pop("XDG_CACHE_HOME", None)
    if xdg is not None:
        env["XDG_CACHE_HOME"] = xdg
    r = subprocess.run([str(exe)], env=env, cwd=offload.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    assert r.returncode == 0 and "mismatches=0" in r.stdout, r.stdout + r.stderr
    assert entries(home / ".cache" / "ompsim" / "jit")
    assert not (offload.tmp / "relative").exists()


def test_off_turns_the_cache_off_and_a_folder_selects_another(offload, exe):
    xdg = offload.tmp / "xdg"
    run_ok(offload, exe, {"XDG_CACHE_HOME": str(xdg), "OMPSIM_JIT_CACHE": "off"})
    assert not xdg.exists()
    run_ok(offload, exe, {"XDG_CACHE_HOME": str(xdg), "OMPSIM_JIT_CACHE": str(offload.tmp / "mine")})
    assert not xdg.exists()
    assert entries(offload.tmp / "mine")


def test_cold_and_warm_runs_give_the_same_device_addresses(offload, exe):
    folder = offload.tmp / "cache"
    outputs = set()
    for env in ({"OMPSIM_JIT_CACHE": "off"}, {"OMPSIM_JIT_CACHE": str(folder)}, {"OMPSIM_JIT_CACHE": str(folder)}):
        r = run_ok(offload, exe, env)
        assert ompsim_lines(r) == [], r.stderr
        outputs.add(r.stdout)
    # off, cold (fills the folder), warm (reads it): one output, addresses included.
    assert len(outputs) == 1, outputs
    assert re.search(r"ind=0x[0-9a-f]+", outputs.pop())


def test_the_cap_evicts_the_least_recently_used_entries_first(offload):
    folder = offload.tmp / "cache"
    exes = [offload.compile(program(n, mod=5 + n), name="p%d.c" % n, translate="pass", image="ir")
            for n in (8, 16, 4)]
    env = {"OMPSIM_JIT_CACHE": str(folder)}
    run_ok(offload, exes[0], env)
    first = set(entries(folder))
    run_ok(offload, exes[1], env)
    second = set(entries(folder)) - first
    assert first and second
    # The first program's entries are used again: the second's are now the oldest.
    run_ok(offload, exes[0], env)
    assert set(entries(folder)) == first | second
    size = sum((folder / e).stat().st_size for e in entries(folder))
    r = run_ok(offload, exes[2], dict(env, OMPSIM_JIT_CACHE_MAX=str(size)))
    assert ompsim_lines(r) == [], r.stderr
    left = set(entries(folder))
    third = left - first - second
    assert third, "the newest entries are kept"
    assert sum((folder / e).stat().st_size for e in left) <= size
    assert second - left, "something was evicted, and the least recently used first"
    if first - left:
        assert not second & left, (sorted(first - left), sorted(second & left))
    # Evicted entries are compiled again when needed.
    r = run_ok(offload, exes[1], env)
    assert second <= set(entries(folder))


def test_concurrent_runs_fill_the_same_entries_safely(offload, exe):
    folder = offload.tmp / "cache"
    env = backends.environment("sim")
    env["OMPSIM_JIT_CACHE"] = str(folder)
    procs = [subprocess.Popen([str(exe)], env=env, cwd=offload.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    for out, err, rc in outs:
        assert rc == 0 and "mismatches=0" in out, out + err
        assert [l for l in err.splitlines() if l.startswith("ompsim")] == [], err
    assert len({out for out, _, _ in outs}) == 1
    # Whole entries only, no temporary file left behind, and a later run reads them.
    names = sorted(p.name for p in folder.iterdir())
    assert names and all(cache.ENTRY.fullmatch(n) for n in names), names
    before = {n: (folder / n).read_bytes() for n in names}
    r = run_ok(offload, exe, {"OMPSIM_JIT_CACHE": str(folder)})
    assert r.stdout == outs[0][0]
    assert {n: (folder / n).read_bytes() for n in sorted(p.name for p in folder.iterdir())} == before


def test_a_damaged_entry_is_compiled_again(offload, exe):
    folder = offload.tmp / "cache"
    env = {"OMPSIM_JIT_CACHE": str(folder)}
    good = run_ok(offload, exe, env).stdout
    whole = {e: (folder / e).read_bytes() for e in entries(folder)}
    for e, data in whole.items():
        flipped = bytearray(data)
        flipped[len(flipped) // 2] ^= 0xff
        (folder / e).write_bytes(bytes(flipped))
    r = run_ok(offload, exe, env)
    assert r.stdout == good and ompsim_lines(r) == [], r.stderr
    assert {e: (folder / e).read_bytes() for e in entries(folder)} == whole


def namespaced(offload, exe, setup, env):
    """Runs `exe` in a private mount namespace after the shell commands `setup` (tmpfs, read-only mounts)."""
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) not installed")
    probe = subprocess.run(["unshare", "-rm", "true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if probe.returncode != 0:
        pytest.skip("no unprivileged mount namespaces here: %s" % probe.stdout.strip())
    e = backends.environment("sim")
    e.update(env)
    return subprocess.run(["unshare", "-rm", "sh", "-c", setup + ' && exec "$0"', str(exe)], env=e, cwd=offload.tmp,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def test_a_full_cache_folder_costs_one_warning(offload, exe):
    folder = offload.tmp / "full"
    folder.mkdir()
    # A 16 KiB file system, already full: every entry fails with ENOSPC.
    r = namespaced(offload, exe, "mount -t tmpfs -o size=16k tmpfs %s && "
                   "(dd if=/dev/zero of=%s/filler bs=1k count=64 2>/dev/null; true)" % (folder, folder),
                   {"OMPSIM_JIT_CACHE": str(folder)})
    assert r.returncode == 0 and "mismatches=0" in r.stdout, r.stdout + r.stderr
    lines = ompsim_lines(r)
    assert len(lines) == 1, r.stderr
    assert str(folder) in lines[0] and "No space left on device" in lines[0], lines[0]


def test_a_read_only_cache_folder_costs_one_warning_and_still_serves_hits(offload, exe):
    folder = offload.tmp / "ro"
    env = {"OMPSIM_JIT_CACHE": str(folder)}
    good = run_ok(offload, exe, env).stdout
    ro = "mount --bind %s %s && mount -o remount,ro,bind %s" % (folder, folder, folder)
    # Every entry is there: reading them needs no write, so no warning.
    r = namespaced(offload, exe, ro, env)
    assert r.returncode == 0 and r.stdout == good and ompsim_lines(r) == [], r.stdout + r.stderr
    # Without them, one line names the folder and the problem; the results are right.
    for e in entries(folder):
        (folder / e).unlink()
    r = namespaced(offload, exe, ro, env)
    assert r.returncode == 0 and r.stdout == good, r.stdout + r.stderr
    lines = ompsim_lines(r)
    assert len(lines) == 1 and str(folder) in lines[0] and "Read-only file system" in lines[0], r.stderr
    assert entries(folder) == []


def test_a_file_where_the_folder_should_be_costs_one_warning(offload, exe):
    blocker = offload.tmp / "blocker"
    blocker.write_text("not a folder\n")
    r = offload.run(exe, backend="sim", env={"XDG_CACHE_HOME": str(blocker)})
    assert r.returncode == 0 and "mismatches=0" in r.stdout, r.stdout + r.stderr
    lines = ompsim_lines(r)
    assert len(lines) == 1 and str(blocker) in lines[0], r.stderr


def test_a_bad_cap_is_named_and_the_default_kept(offload, exe):
    folder = offload.tmp / "cache"
    r = run_ok(offload, exe, {"OMPSIM_JIT_CACHE": str(folder), "OMPSIM_JIT_CACHE_MAX": "lots"})
    assert ompsim_lines(r) == ["ompsim: ignoring OMPSIM_JIT_CACHE_MAX='lots': not a whole non-negative number "
                               "(expected a size 1K..1024G (suffixes K, M, G))"], r.stderr
    assert entries(folder)


TWO_DEVICES = r"""
#include <stdio.h>
#pragma omp declare target
int twice(int x) { return 2 * x; }
#pragma omp end declare target
int main(void) {
  int bad = 0;
  for (int d = 0; d < 2; ++d) {
    int s = d + 1;
#pragma omp target device(d) map(tofrom : s)
    { s = twice(s); }
    bad += s != 2 * (d + 1);
  }
  printf("mismatches=%d\n", bad);
  return bad != 0;
}
"""


def test_two_devices_that_cannot_use_the_folder_warn_once(offload):
    exe = offload.compile(TWO_DEVICES, name="two.c", translate="pass", image="ir")
    blocker = offload.tmp / "blocker"
    blocker.write_text("not a folder\n")
    r = run_ok(offload, exe, {"OMPSIM_JIT_CACHE": str(blocker / "jit"), "OMPSIM_NUM_DEVICES": "2"})
    lines = ompsim_lines(r)
    assert len(lines) == 1 and str(blocker) in lines[0], r.stderr


def test_a_warm_run_down_another_path_compiles_what_the_cache_lacks(offload):
    """A warm run loads the image lazily (its summary is cached): the vtable
    slot and indirect functions the first run never called are parsed,
    rewritten and compiled on their first call, with the same pointers."""
    from test_sim_lazy_jit import LAZY
    exe = offload.compile(LAZY, name="lazy.cpp", translate="pass", image="ir")
    folder = offload.tmp / "cache"
    env = {"OMPSIM_JIT_CACHE": str(folder)}
    r = run_ok(offload, exe, env)
    assert "d=25" in r.stdout, r.stdout
    first = set(entries(folder))
    for args, want in ((["rect"], "d=6"), ([], "d=25"), (["rect"], "d=6")):
        r = run_ok(offload, exe, env, args=args)
        assert want in r.stdout and ompsim_lines(r) == [], r.stdout + r.stderr
    # The rect run added the code of what it called first; the runs after it wrote nothing new.
    assert first < set(entries(folder))
