"""Bad images and entries handed to ompsim's runtime: one line naming the object and the problem.

programs/fake_program.c builds its own offload descriptor around a real
clang-22 device image (of programs/image_source.c) and breaks one thing per
case. Each case runs on both of ompsim's backends.
"""
import os
import subprocess

import pytest

from reliability_helpers import build_fake, ompsim_lines, run
from ompsim_base import gpu, paths

BACKENDS = ["sim", "ours-host"]
DESC = r"descriptor 0x[0-9a-f]+"
IMAGE0 = r"device image 0 of " + DESC


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """(fake program, real device image, aarch64 bitcode, kernel, add1 global, mul2 global)."""
    return build_fake(tmp_path_factory.mktemp("fake"), "image_source.c")


def run_case(fake, backend, case):
    exe, image, bitcode, kernel, add1, mul2 = fake
    img = bitcode if case == "bitcode" else image
    return run(exe, backend, [case, img, kernel, add1, mul2], timeout=120)


def test_well_formed_descriptor_runs(fake):
    """The harness itself: an untouched descriptor registers, launches and unregisters."""
    for backend in BACKENDS:
        r = run_case(fake, backend, "ok")
        assert r.rc == 0, r.err
        assert "fake: done" in r.out and ompsim_lines(r.err) == [], r.err
        assert r.leftover == []


# case -> {backend: regex of the one ompsim: line} ("*" for both backends).
CASES = {
    # ours-host checks an image with the sim loader's own validator before
    # dlopen: the same reason, after each backend's prefix.
    "truncated": {
        "sim": r"ompsim: device 0: image #\d+: PT_LOAD segment \d+ lies outside the file",
        "ours-host": r"ompsim: cannot load device image at 0x[0-9a-f]+ \(\d+ bytes\): PT_LOAD segment \d+ lies "
                     r"outside the file",
    },
    "corrupted": {
        "sim": r"ompsim: device 0: image #\d+: no program headers",
        "ours-host": r"ompsim: cannot load device image at 0x[0-9a-f]+ \(\d+ bytes\): no program headers",
    },
    "machine": {"*": r"ompsim: no device image loaded on device 0 provides the target region "
                     r"host:region_id\+0x0 \(0x[0-9a-f]+\); no plugin accepted %s \(ELF for machine 183\)" % IMAGE0},
    "bitcode": {"*": r"ompsim: no device image loaded on device 0 provides the target region "
                     r"host:region_id\+0x0 \(0x[0-9a-f]+\); no plugin accepted %s \(LLVM bitcode for "
                     r"aarch64-unknown-linux-gnu\)" % IMAGE0},
    "empty": {"*": r"ompsim: malformed %s: image bytes \[(0x[0-9a-f]+), \1\) are empty or inverted" % IMAGE0},
    "no-images": {"*": r"ompsim: malformed offload descriptor of %s: it holds no device images" % DESC},
    "null-address": {"*": r"ompsim: bad offload entry 0 of %s: '__omp_offloading_\w+_add1_l\d+' has a null "
                          r"address" % IMAGE0},
    "misaligned": {"*": r"ompsim: malformed entry table of %s: start 0x[0-9a-f]+ is not 8-byte aligned" % IMAGE0},
    "unterminated-name": {"*": r"ompsim: bad offload entry 0 of %s: symbol name at 0x[0-9a-f]+ is unterminated: "
                               r"it runs into unreadable memory at 0x[0-9a-f]+ \(starts 'A{32}'\)" % IMAGE0},
    "long-name": {"*": r"ompsim: bad offload entry 0 of %s: symbol name at 0x[0-9a-f]+ is unterminated or "
                       r"longer than 4096 bytes \(starts 'B{32}'\)" % IMAGE0},
    "duplicate-host-pointer": {"*": r"ompsim: entry '__omp_offloading_\w+_mul2_l\d+' of %s maps host address "
                                    r"host:host_add1\+0x0 \(0x[0-9a-f]+\) to 0x[0-9a-f]+, but it is already "
                                    r"mapped to 0x[0-9a-f]+ \('__omp_offloading_\w+_add1_l\d+'\)" % IMAGE0},
    "missing-device-global": {"*": r"ompsim: indirect entry '__omp_offloading_fe00_0_nonexistent_l1' of %s has "
                                   r"no device global of that name on device 0" % IMAGE0},
    "vtable-size": {"*": r"ompsim: indirect vtable entry '__omp_offloading_\w+_mul2_l\d+' of %s has size 12, "
                         r"which is not a non-zero multiple of 8" % IMAGE0},
    "mixed-formats": {"*": r"ompsim: malformed entry table of %s: 144 bytes is not a whole number of 32-byte "
                           r"entries \(the first entry is in the LLVM <= 19 format; formats mixed\?\)" % IMAGE0},
    "image-end-1m": {"*": r"ompsim: malformed %s: image bytes \[0x[0-9a-f]+, 0x[0-9a-f]+\) \(\d+ bytes\) are not "
                          r"readable host memory \(nothing readable at 0x[0-9a-f]+000\)" % IMAGE0},
    "image-end-4g": {"*": r"ompsim: malformed %s: image bytes \[0x[0-9a-f]+, 0x[0-9a-f]+\) \(\d+ bytes\) are more "
                          r"than a device image may hold \(1 GiB\)" % IMAGE0},
    "unmapped-images": {"*": r"ompsim: malformed offload descriptor of %s: its 1 device images at 0x10 are not "
                             r"readable host memory \(nothing readable at 0x10\)" % DESC},
    "unmapped-entries": {"*": r"ompsim: malformed entry table of %s: entries \[0x[0-9a-f]+, 0x[0-9a-f]+\) are not "
                              r"readable host memory \(nothing readable at 0x[0-9a-f]+000\)" % IMAGE0},
    "unregister-without-register": {"*": r"ompsim: __tgt_unregister_lib: offload %s was never registered" % DESC},
    "double-register": {"*": r"ompsim: offload %s is registered twice" % DESC},
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(fake, backend, case):
    import re
    expected = CASES[case].get(backend, CASES[case].get("*"))
    r = run_case(fake, backend, case)
    line = r.single_error()  # non-zero exit (no signal), one line, no executor left
    assert re.fullmatch(expected, line), line
    assert "fake: done" not in r.out


# GPU device images (nvptx64 LLVM IR) sim cannot take: each is one line. The fake program
# hands the file to the runtime as its device image.
GPU_IMAGES = {
    "gpu-intrinsic": (lambda bc, out: out.write_bytes(bc.read_bytes()),
                      r"ompsim: device 0: image #\d+ \(nvptx64\): function 'f' calls llvm\.nvvm\.read\.ptx\.sreg\.tid\.x, "
                      r"a GPU intrinsic the simulated device does not run"),
    "gpu-truncated": (lambda bc, out: out.write_bytes(bc.read_bytes()[:len(bc.read_bytes()) // 2]),
                      r"ompsim: no device image loaded on device 0 provides the target region host:region_id\+0x0 "
                      r"\(0x[0-9a-f]+\); no plugin accepted %s \(unreadable LLVM bitcode\)" % IMAGE0),
}


@pytest.mark.parametrize("case", sorted(GPU_IMAGES))
def test_bad_gpu_image_on_sim(fake, tmp_path, case):
    import re
    exe, image, bitcode, kernel, add1, mul2 = fake
    (tmp_path / "f.c").write_text("int f(void) { return __nvvm_read_ptx_sreg_tid_x(); }\n")
    bc = tmp_path / "f.bc"
    # The PTX version is given: without CUDA clang-22 would target PTX 4.2, which sm_90 refuses.
    subprocess.run([paths.tool("clang"), "--target=nvptx64-nvidia-cuda", "-march=sm_90",
                    *gpu.ptx_feature_flags("sm_90", []), "-O1", "-c", "-emit-llvm", str(tmp_path / "f.c"),
                    "-o", str(bc)], check=True, capture_output=True)
    make, expected = GPU_IMAGES[case]
    img = tmp_path / (case + ".bc")
    make(bc, img)
    r = run(exe, "sim", ["bitcode", img, kernel, add1, mul2], timeout=120)
    line = r.single_error()  # non-zero exit, one line, no executor left
    assert re.fullmatch(expected, line), line


def _without_section_headers(image, out):
    subprocess.run([paths.tool("llvm-objcopy"), "--strip-sections", str(image), str(out)], check=True,
                   capture_output=True)


def _patched(image, out, offset, fmt, value):
    import struct
    data = bytearray(image.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    out.write_bytes(bytes(data))


# Section headers are not needed to load a shared object (the dynamic linker
# never reads them), so each of these images loads and runs on both backends.
SECTIONLESS = {
    "strip-sections": _without_section_headers,
    "huge-e_shoff": lambda image, out: _patched(image, out, 0x28, "<Q", 0x7fffffffffff0000),
    "e_shnum-65535": lambda image, out: _patched(image, out, 0x3c, "<H", 65535),
    "one-byte-short": lambda image, out: out.write_bytes(image.read_bytes()[:-1]),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(SECTIONLESS))
def test_image_loads_from_its_dynamic_segment_alone(fake, tmp_path, backend, case):
    exe, image, _, kernel, add1, mul2 = fake
    changed = tmp_path / ("%s.img" % case)
    SECTIONLESS[case](image, changed)
    if case == "one-byte-short":  # the cut falls in the section header table, past every segment
        assert changed.stat().st_size == image.stat().st_size - 1
    r = run(exe, backend, ["ok", changed, kernel, add1, mul2], timeout=120)
    assert r.rc == 0, r.err
    assert "fake: launched rc=0" in r.out and "fake: done" in r.out, r.out + r.err
    assert ompsim_lines(r.err) == [], r.err
