"""Corrupted images that once crashed ours-host: each refused on both backends with the same reason.

ours-host hands a device image to the dynamic linker after the sim loader's
check-only validator; these eleven images passed that check and then crashed
the host process (SIGSEGV in dlopen, in an initializer or at the first
launch). The validator now names each one, so sim (which loads the image in
its executor with the same checks) and ours-host give the same reason, and
the program ends with one line and a non-zero status. Each image is made
from a real clang-22 device image (programs/checked_image_source.c, whose
kernel calls an import through the PLT) by image_corpus.named_cases().
"""
import re

import pytest

from image_corpus import named_cases
from reliability_helpers import build_fake, run

PREFIX = {
    "sim": r"ompsim: device 0: image #\d+: ",
    "ours-host": r"ompsim: cannot load device image at 0x[0-9a-f]+ \(\d+ bytes\): ",
}
CASES = ["data-segment-read-only", "relro-covers-every-segment", "dt-versym-outside", "dt-verneed-outside",
         "kernel-mid-instruction", "kernel-tls", "kernel-abs", "global-in-code", "import-relocation-names-kernel",
         "jmprel-symbol-0", "init-array-entry-is-kernel"]


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """(fake program, kernel, add1, mul2, {case: (image path, reason regex)})."""
    d = tmp_path_factory.mktemp("checked")
    exe, image, _, kernel, add1, mul2 = build_fake(d, "checked_image_source.c")
    images = {}
    for name, (data, reason) in named_cases(str(image)).items():
        path = d / (name + ".img")
        path.write_bytes(data)
        images[name] = (path, reason)
    return exe, image, kernel, add1, mul2, images


def test_the_untouched_image_runs(checked):
    """The image the cases break is valid: it registers, launches and unregisters on both backends."""
    exe, image, kernel, add1, mul2, images = checked
    assert sorted(images) == sorted(CASES)
    for backend in PREFIX:
        r = run(exe, backend, ["ok", image, kernel, add1, mul2], timeout=120)
        assert r.rc == 0 and "fake: done" in r.out, r.err
        assert r.leftover == []


@pytest.mark.parametrize("backend", sorted(PREFIX))
@pytest.mark.parametrize("case", CASES)
def test_corrupted_image_is_named(checked, backend, case):
    exe, _, kernel, add1, mul2, images = checked
    path, reason = images[case]
    r = run(exe, backend, ["ok", path, kernel, add1, mul2], timeout=120)
    line = r.single_error()  # non-zero exit (no signal), one ompsim: line, no executor left
    assert re.fullmatch(PREFIX[backend] + reason, line), line
    assert "fake: done" not in r.out
