"""Stock libomptarget's LIBOMPTARGET_JIT_* variables on sim's JIT of bitcode images.

PRE_OPT_IR_MODULE and POST_OPT_IR_MODULE write the image's module as text IR
before and after the IR pipeline, which runs when OPT_LEVEL is set unless
SKIP_OPT; SAVE_IMAGE_FILENAME saves the compiled object; REPLACEMENT_MODULE
compiles another module instead of the image. Every file is written at every
load, with the JIT cache cold or warm. A file that cannot be written costs one
line and never the run (docs/environment.md).
"""
import re

import pytest

from ompsim_cli import cache

#: A kernel whose loop the IR pipeline folds (built at -O0, so the image keeps it).
PROGRAM = r"""
#include <stdio.h>
int main(void) {
  int x = 0;
#pragma omp target map(tofrom : x)
  for (int i = 0; i < 10; ++i)
    x += i;
  printf("x=%d\n", x);
  return 0;
}
"""

KERNEL = re.compile(r"^define weak_odr protected void @__omp_offloading_\w+_main_l\d+\(.*?^}$", re.M | re.S)


@pytest.fixture
def exe(offload):
    return offload.compile(PROGRAM, name="jitvars.c", image="ir", extra=["-O0", "-g0"])


def entries(folder):
    return sorted(p.name for p in folder.iterdir() if cache.ENTRY.fullmatch(p.name)) if folder.is_dir() else []


def ompsim_lines(r):
    return [l for l in r.stderr.splitlines() if l.startswith("ompsim")]


def run(offload, exe, env, out="x=45\n"):
    r = offload.run(exe, backend="sim", env=env)
    assert r.returncode == 0 and r.stdout == out, (r.stdout, r.stderr)
    return r


def kernel(ll):
    m = KERNEL.search(ll)
    assert m, ll
    return m.group(0)


def test_the_files_are_written_with_the_cache_cold_and_warm(offload, exe):
    folder = offload.tmp / "cache"
    pre, post, image = offload.tmp / "pre.ll", offload.tmp / "post.ll", offload.tmp / "image.o"
    env = {"OMPSIM_JIT_CACHE": str(folder), "LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE": str(pre),
           "LIBOMPTARGET_JIT_POST_OPT_IR_MODULE": str(post), "LIBOMPTARGET_JIT_SAVE_IMAGE_FILENAME": str(image)}
    written = []
    for _ in ("cold", "warm"):
        for f in (pre, post, image):
            f.unlink(missing_ok=True)
        r = run(offload, exe, env)
        assert ompsim_lines(r) == [], r.stderr
        written.append((pre.read_text(), post.read_text(), image.read_bytes(), entries(folder)))
    (pre_cold, post_cold, image_cold, cold), (pre_warm, post_warm, image_warm, warm) = written
    assert "alloca" in kernel(pre_cold)
    # Without LIBOMPTARGET_JIT_OPT_LEVEL no IR pipeline runs: the module compiled is the image's.
    assert post_cold == pre_cold
    # A relocatable x86-64 ELF object defining the kernel.
    assert image_cold[:4] == b"\x7fELF" and image_cold[16] == 1 and image_cold[18] == 62
    assert re.search(rb"__omp_offloading_\w+_main_l\d+", image_cold)
    # The warm run compiled nothing new and wrote the same files.
    assert cold and warm == cold
    assert (pre_warm, post_warm, image_warm) == (pre_cold, post_cold, image_cold)


@pytest.mark.parametrize("cache_on", [True, False], ids=["cache", "no-cache"])
def test_opt_level_runs_the_ir_pipeline_and_skip_opt_skips_it(offload, exe, cache_on):
    pre, post = offload.tmp / "pre.ll", offload.tmp / "post.ll"
    env = {"OMPSIM_JIT_CACHE": str(offload.tmp / "cache") if cache_on else "off",
           "LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE": str(pre), "LIBOMPTARGET_JIT_POST_OPT_IR_MODULE": str(post),
           "LIBOMPTARGET_JIT_OPT_LEVEL": "3"}
    for _ in range(2 if cache_on else 1):
        post.unlink(missing_ok=True)
        assert ompsim_lines(run(offload, exe, env)) == []
        assert "alloca" in kernel(pre.read_text())
        optimized = kernel(post.read_text())
        assert "alloca" not in optimized and "add i32 %.promoted, 45" in optimized, optimized
    assert ompsim_lines(run(offload, exe, dict(env, LIBOMPTARGET_JIT_SKIP_OPT="true"))) == []
    assert post.read_text() == pre.read_text()


def test_a_replacement_module_is_compiled_instead_of_the_image(offload, exe):
    pre = offload.tmp / "pre.ll"
    run(offload, exe, {"LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE": str(pre)})
    ll = pre.read_text()
    edited = re.sub(r"icmp slt i32 (%\d+), 10\b", r"icmp slt i32 \1, 5", ll)
    assert edited != ll
    replacement = offload.tmp / "replacement.ll"
    replacement.write_text(edited)
    for _ in range(2):  # the cache keys the replacement's bytes
        run(offload, exe, {"LIBOMPTARGET_JIT_REPLACEMENT_MODULE": str(replacement)}, out="x=10\n")
    run(offload, exe, {}, out="x=45\n")


def test_a_file_that_cannot_be_written_is_one_line_and_the_run_goes_on(offload, exe):
    missing = offload.tmp / "no-such-folder" / "pre.ll"
    r = run(offload, exe, {"LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE": str(missing),
                           "LIBOMPTARGET_JIT_SAVE_IMAGE_FILENAME": str(offload.tmp)})
    assert ompsim_lines(r) == [
        "ompsim: LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE '%s': cannot open it: No such file or directory "
        "(the run goes on without it)" % missing,
        "ompsim: LIBOMPTARGET_JIT_SAVE_IMAGE_FILENAME '%s': cannot open it: Is a directory "
        "(the run goes on without it)" % offload.tmp], r.stderr


def test_an_unreadable_replacement_module_fails_the_load_naming_it(offload, exe):
    bad = offload.tmp / "bad.ll"
    bad.write_text("not IR\n")
    for path, problem in ((offload.tmp / "missing.ll", "cannot read it: No such file or directory"),
                          (bad, "not LLVM IR: line 1: expected top-level entity")):
        r = offload.run(exe, backend="sim", env={"LIBOMPTARGET_JIT_REPLACEMENT_MODULE": str(path)})
        assert r.returncode != 0 and "x=" not in r.stdout
        assert "ompsim: device 0: image #1: LIBOMPTARGET_JIT_REPLACEMENT_MODULE '%s': %s" % (path, problem) \
            in ompsim_lines(r), r.stderr


def test_honoured_variables_get_no_notice_and_bad_values_one_line_each(offload, exe):
    r = run(offload, exe, {"LIBOMPTARGET_JIT_OPT_LEVEL": "4", "LIBOMPTARGET_JIT_SKIP_OPT": "maybe",
                           "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT": str(offload.tmp / "x.o")})
    assert ompsim_lines(r) == [
        "ompsim: ignoring LIBOMPTARGET_JIT_OPT_LEVEL='4': out of range (expected an integer 0..3)",
        "ompsim: ignoring LIBOMPTARGET_JIT_SKIP_OPT='maybe': not a flag (expected true/yes/on/1 or false/no/off/0)",
        "ompsim: ignoring LIBOMPTARGET_JIT_REPLACEMENT_OBJECT: stock libomptarget variable ompsim does not honour "
        "(see docs/environment.md)"], r.stderr
