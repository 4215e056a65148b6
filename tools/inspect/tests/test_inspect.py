"""ompsim-inspect / `ompsim inspect` on binaries compiled with clang-22 at test time.

Expected values come from the compiler's own output (llvm-nm addresses and sizes,
the source's function and class names), never from a stored listing.
"""
import json
import os
import subprocess

import pytest

from ompsim_base import paths

INSPECT = os.path.join(paths.BIN, "ompsim-inspect")
OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")
OFFLOAD = ["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"]

pytestmark = pytest.mark.skipif(not os.path.exists(INSPECT), reason="ompsim-inspect not built in %s" % paths.BUILD)

INDIRECT_C = r"""
#include <stdio.h>
int add1(int x) { return x + 1; }
int mul2(int x) { return x * 2; }
#pragma omp declare target to(add1, mul2) indirect
int main(int argc, char **argv) {
  int (*fp)(int) = argc > 1 ? mul2 : add1;
  int r = 0;
  #pragma omp target map(from: r)
  { r = fp(3); }
  printf("%d\n", r);
  return 0;
}
"""

VIRTUAL_CPP = r"""
#include <cstdio>
struct Base { virtual int f(int); virtual int g(int); virtual ~Base() {} };
struct Der : Base { int f(int) override; int g(int) override; };
#pragma omp begin declare target indirect
int Base::f(int x) { return x; }
int Base::g(int x) { return x - 1; }
int Der::f(int x) { return x + 10; }
int Der::g(int x) { return x + 20; }
#pragma omp end declare target
int main() {
  Der d;
  Base *b = &d;
  int r = 0;
  #pragma omp target map(from: r) map(to: d)
  { r = b->f(1) + b->g(2); }
  std::printf("%d\n", r);
}
"""

LIBRARY_C = r"""
int add1(int x) { return x + 1; }
int mul2(int x) { return x * 2; }
#pragma omp declare target to(add1, mul2) indirect
int run(int v) {
  int (*fp)(int) = v > 0 ? mul2 : add1;
  int r = 0;
  #pragma omp target map(from: r)
  { r = fp(v); }
  return r;
}
"""

# The LLVM <= 19 entry layout {addr, name, size, flags, reserved}, in the section
# those compilers used; built as a PIE or a shared library the pointers are relocations.
LEGACY_C = r"""
#include <stddef.h>
#include <stdint.h>
struct legacy_entry { void *addr; char *name; size_t size; int32_t flags; int32_t reserved; };
int add1(int x) { return x + 1; }
int mul2(int x) { return x * 2; }
static const char region_id = 0;
__attribute__((used, section("omp_offloading_entries"), aligned(8)))
struct legacy_entry entries[] = {
  {(void *)add1, "__omp_offloading_legacy_add1_l1", 8, 0x8, 0},
  {(void *)mul2, "__omp_offloading_legacy_mul2_l2", 8, 0x8, 0},
  {(void *)&region_id, "__omp_offloading_legacy_main_l9", 0, 0, 0},
};
int main(void) { return 0; }
"""


def compile_c(tmp_path, source, name, args, cxx=False):
    src = tmp_path / name
    src.write_text(source)
    out = tmp_path / (os.path.splitext(name)[0] + (".so" if "-shared" in args else ".exe"))
    cmd = [paths.tool("clang++" if cxx else "clang"), str(src), "-o", str(out), *args]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, "compile failed: %s\n%s" % (" ".join(cmd), r.stdout)
    return out


def inspect_json(path):
    r = subprocess.run([INSPECT, "--json", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def nm_symbols(path):
    """{name: (value, size)} of defined symbols, from llvm-nm (the reference for addresses)."""
    r = subprocess.run([paths.tool("llvm-nm"), "-S", "--defined-only", str(path)], stdout=subprocess.PIPE,
                       text=True, check=True)
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            out[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
        elif len(parts) == 3:
            out[parts[2]] = (int(parts[0], 16), 0)
    return out


def entry_for(report, suffix_re):
    import re
    hits = [e for e in report["entries"] if re.search(suffix_re, e["name"])]
    assert len(hits) == 1, "expected one entry matching %r in %s" % (suffix_re, [e["name"] for e in report["entries"]])
    return hits[0]


@pytest.fixture(scope="module")
def indirect_exe(tmp_path_factory):
    return compile_c(tmp_path_factory.mktemp("ind"), INDIRECT_C, "ind.c", OFFLOAD + ["-O1"])


def test_indirect_functions_entries_and_image(indirect_exe):
    rep = inspect_json(indirect_exe)
    nm = nm_symbols(indirect_exe)
    assert rep["elf_type"] == "pie-executable"
    assert rep["entry_format"] == "current" and rep["entry_section"] == "llvm_offload_entries"
    assert len(rep["images"]) == 1
    img = rep["images"][0]
    assert img["kind"] == "elf-shared-object"
    assert img["triple"] == "x86_64-pc-linux-gnu"
    assert img["size"] > 0 and img["symbols_known"]

    for fn in ("add1", "mul2"):
        e = entry_for(rep, r"_%s_l\d+$" % fn)
        assert e["flags"] == 0x8 and e["flag_names"] == ["indirect"]
        assert e["role"] == "indirect-function" and e["size"] == 8
        assert e["version"] == 1 and e["kind"] == 1
        # The address is a RELATIVE relocation in the file; it must match the symbol table.
        assert e["host_symbol"] == fn
        assert int(e["host_address"], 16) == nm[fn][0]
    kernel = entry_for(rep, r"_main_l\d+$")
    assert kernel["flags"] == 0 and kernel["size"] == 0 and kernel["role"] == "kernel"
    assert kernel["host_symbol"].endswith(".region_id")

    ind = {i["host_symbol"]: i for i in rep["indirect"]}
    assert sorted(ind) == ["add1", "mul2"]
    for fn, i in ind.items():
        assert i["kind"] == "function" and i["slots"] == 1
        assert i["device_global"] == entry_for(rep, r"_%s_l\d+$" % fn)["name"]
        assert i["defined_in"] == [0] and i["missing_in"] == []


def test_human_table_lists_entries(indirect_exe):
    r = subprocess.run([INSPECT, str(indirect_exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any("indirect-function" in l and "add1+0x0" in l and "0x8 indirect" in l for l in lines), r.stdout
    assert any("kernel" in l and "_main_l" in l for l in lines), r.stdout
    assert any(l.strip().startswith("0 elf-shared-object") for l in lines), r.stdout


def test_ompsim_inspect_command_passes_through(indirect_exe, tmp_path):
    r = subprocess.run([OMPSIM, "inspect", "--json", str(indirect_exe)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=dict(os.environ, OMPSIM_BUILD_DIR=paths.BUILD))
    assert r.returncode == 0, r.stderr
    assert {i["host_symbol"] for i in json.loads(r.stdout)["indirect"]} == {"add1", "mul2"}
    bad = tmp_path / "notes.txt"
    bad.write_text("not a binary\n")
    r = subprocess.run([OMPSIM, "inspect", str(bad)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, OMPSIM_BUILD_DIR=paths.BUILD))
    assert r.returncode != 0
    assert r.stderr.strip() == "ompsim: %s: not an ELF file" % bad


def test_vtables_of_classes_used_in_region(tmp_path):
    exe = compile_c(tmp_path, VIRTUAL_CPP, "virt.cpp", OFFLOAD + ["-O1"], cxx=True)
    rep = inspect_json(exe)
    nm = nm_symbols(exe)
    vtables = {i["host_symbol"]: i for i in rep["indirect"] if i["kind"] == "vtable"}
    assert sorted(vtables) == ["vtable for Base", "vtable for Der"]
    for cls, mangled in (("Base", "_ZTV4Base"), ("Der", "_ZTV3Der")):
        v = vtables["vtable for " + cls]
        e = rep["entries"][v["entry"]]
        assert e["flags"] == 0x20 and e["flag_names"] == ["indirect-vtable"] and e["role"] == "indirect-vtable"
        assert v["host_symbol_mangled"] == mangled
        assert int(v["host_address"], 16) == nm[mangled][0]
        # One slot per 8 bytes of the whole vtable, as the symbol table sizes it.
        assert e["size"] == nm[mangled][1] and v["slots"] == nm[mangled][1] // 8
        assert v["device_global"].endswith("_ZTV%d%s_l%s" % (len(cls), cls, v["device_global"].rsplit("_l", 1)[1]))
        assert v["device_global"].endswith("addr")
        assert v["defined_in"] == [0]
    funcs = sorted(i["host_symbol"] for i in rep["indirect"] if i["kind"] == "function")
    assert funcs == ["Base::f(int)", "Base::g(int)", "Der::f(int)", "Der::g(int)"]


def test_shared_library(tmp_path):
    lib = compile_c(tmp_path, LIBRARY_C, "libind.c", OFFLOAD + ["-O1", "-fPIC", "-shared"])
    rep = inspect_json(lib)
    nm = nm_symbols(lib)
    assert rep["elf_type"] == "shared-library"
    ind = {i["host_symbol"]: i for i in rep["indirect"]}
    assert sorted(ind) == ["add1", "mul2"]
    for fn, i in ind.items():
        assert int(i["host_address"], 16) == nm[fn][0]
        assert i["defined_in"] == [0]
    assert entry_for(rep, r"_run_l\d+$")["role"] == "kernel"
    assert rep["images"][0]["kind"] == "elf-shared-object"


def test_jit_build_embeds_bitcode(tmp_path):
    exe = compile_c(tmp_path, INDIRECT_C, "jit.c",
                    OFFLOAD + ["-fopenmp-target-jit", "-O1", "-Wl,--device-compiler=-fuse-ld=lld"])
    rep = inspect_json(exe)
    assert [img["kind"] for img in rep["images"]] == ["bitcode"]
    assert rep["images"][0]["triple"] == "x86_64-pc-linux-gnu"
    # The bitcode's globals are read, so the indirect device globals are checked there too.
    assert {i["host_symbol"]: i["defined_in"] for i in rep["indirect"]} == {"add1": [0], "mul2": [0]}


@pytest.mark.parametrize("shape", ["pie", "shared", "nopie"])
def test_legacy_entries(tmp_path, shape):
    args = {"pie": ["-fPIE", "-pie"], "shared": ["-fPIC", "-shared"], "nopie": ["-fno-pic", "-no-pie"]}[shape]
    binary = compile_c(tmp_path, LEGACY_C, "legacy.c", ["-O1"] + args)
    rep = inspect_json(binary)
    nm = nm_symbols(binary)
    assert rep["entry_format"] == "legacy" and rep["entry_section"] == "omp_offloading_entries"
    assert rep["images"] == []
    names = [e["name"] for e in rep["entries"]]
    assert names == ["__omp_offloading_legacy_add1_l1", "__omp_offloading_legacy_mul2_l2",
                     "__omp_offloading_legacy_main_l9"]
    for e, fn in zip(rep["entries"], ("add1", "mul2")):
        assert e["flags"] == 0x8 and e["role"] == "indirect-function" and e["size"] == 8
        assert e["host_symbol"] == fn and int(e["host_address"], 16) == nm[fn][0]
        assert "version" not in e  # the legacy layout has no version field
    assert rep["entries"][2]["role"] == "kernel" and rep["entries"][2]["host_symbol"] == "region_id"
    # No image to check against: neither defined nor missing.
    assert all(i["defined_in"] == [] and i["missing_in"] == [] for i in rep["indirect"])


def test_device_global_missing_from_image(tmp_path):
    """An image lacking an indirect function's device global is reported as missing it."""
    lib = compile_c(tmp_path, LEGACY_C.replace("int main(void) { return 0; }", ""), "host.c",
                    ["-O1", "-fPIC", "-shared"])
    dev = compile_c(tmp_path, "int __omp_offloading_legacy_add1_l1 = 1;\n", "dev.c", ["-fPIC", "-shared"])
    blob = tmp_path / "dev.bin"
    subprocess.run([paths.tool("clang-offload-packager"), "-o", str(blob),
                    "--image=file=%s,triple=x86_64-pc-linux-gnu,kind=openmp" % dev], check=True)
    combined = tmp_path / "libcombined.so"
    subprocess.run([paths.tool("llvm-objcopy"), "--add-section", ".llvm.offloading=%s" % blob,
                    "--set-section-type", ".llvm.offloading=0x6fff4c0b", str(lib), str(combined)], check=True)
    rep = inspect_json(combined)
    assert [img["kind"] for img in rep["images"]] == ["elf-shared-object"]
    where = {i["host_symbol"]: (i["defined_in"], i["missing_in"]) for i in rep["indirect"]}
    assert where == {"add1": ([0], []), "mul2": ([], [0])}
    human = subprocess.run([INSPECT, str(combined)], stdout=subprocess.PIPE, text=True).stdout
    assert any("mul2" in l and "MISSING in 0" in l for l in human.splitlines()), human


def run_inspect_error(path):
    r = subprocess.run([INSPECT, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ompsim: %s: " % path), r.stderr
    return lines[0]


def test_bad_inputs_give_one_line(tmp_path, indirect_exe):
    text = tmp_path / "readme.txt"
    text.write_text("hello\n")
    assert run_inspect_error(text).endswith("not an ELF file")

    data = indirect_exe.read_bytes()
    truncated = tmp_path / "truncated"
    truncated.write_bytes(data[: len(data) // 2])
    assert "truncated" in run_inspect_error(truncated)

    tiny = tmp_path / "tiny"
    tiny.write_bytes(data[:40])
    assert "smaller than an ELF header" in run_inspect_error(tiny)

    plain = compile_c(tmp_path, "int main(void) { return 0; }\n", "plain.c", ["-O1"])
    assert "no offload section" in run_inspect_error(plain)

    assert "cannot read" in run_inspect_error(tmp_path / "does-not-exist")


def test_corrupt_image_blob(tmp_path, indirect_exe):
    """A damaged OffloadBinary header is named with its offset, not silently skipped."""
    out = subprocess.run([paths.tool("llvm-readelf"), "-SW", str(indirect_exe)], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    line = next(l for l in out.splitlines() if " .llvm.offloading " in l)
    fields = line.split("]", 1)[1].split()
    offset = int(fields[3], 16)
    data = bytearray(indirect_exe.read_bytes())
    data[offset] ^= 0xFF
    bad = tmp_path / "badmagic"
    bad.write_bytes(bytes(data))
    assert "lacks the OffloadBinary magic" in run_inspect_error(bad)


def test_non_pie_executable(tmp_path):
    """Without relocations the entry fields hold absolute addresses; they are read as is."""
    exe = compile_c(tmp_path, INDIRECT_C, "nopie.c", OFFLOAD + ["-O1", "-fno-pic", "-no-pie"])
    rep = inspect_json(exe)
    nm = nm_symbols(exe)
    assert rep["elf_type"] == "executable"
    assert {i["host_symbol"]: int(i["host_address"], 16) for i in rep["indirect"]} == \
        {"add1": nm["add1"][0], "mul2": nm["mul2"][0]}


def test_stripped_binary_keeps_addresses(tmp_path, indirect_exe):
    """A stripped PIE loses the names of add1/mul2 but its entries and relocations remain."""
    stripped = tmp_path / "stripped"
    subprocess.run([paths.tool("llvm-strip"), "--strip-all", "-o", str(stripped), str(indirect_exe)], check=True)
    nm = nm_symbols(indirect_exe)
    rep = inspect_json(stripped)
    by_addr = {int(i["host_address"], 16): i for i in rep["indirect"]}
    assert sorted(by_addr) == sorted([nm["add1"][0], nm["mul2"][0]])
    assert all(i["host_symbol"] is None and i["defined_in"] == [0] for i in by_addr.values())
