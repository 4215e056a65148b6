"""The same corpus of corrupted device images on sim and ours-host.

sim loads images in its executor with its own ELF loader; ours-host checks an
image with that loader's validator (the same checks, the same messages) before
the dynamic linker may see it. So for every image of the corpus both backends
agree: both run it, or both refuse it with one line giving the same reason,
and neither dies by a signal other than stock's abort() after its fatal line.
"""
import re
import signal

import pytest

from image_corpus import cases
from reliability_helpers import ompsim_lines, run
from test_bad_input import fake  # noqa: F401  (the fixture: fake program + real image)

PREFIX = {
    "sim": r"ompsim: device 0: image #\d+: ",
    "ours-host": r"ompsim: cannot load device image at 0x[0-9a-f]+ \(\d+ bytes\): ",
}


def outcome(fake, backend, path):
    exe, _, _, kernel, add1, mul2 = fake
    r = run(exe, backend, ["ok", path, kernel, add1, mul2], timeout=120)
    # An image a device cannot load at its first use is stock's fatal error:
    # its line, ompsim's, then abort() (the only signal allowed).
    stock_abort = r.rc == -signal.SIGABRT and "omptarget fatal error" in r.err
    assert r.rc >= 0 or stock_abort, "%s killed by signal %d on %s\n%s" % (path.name, -r.rc, backend, r.err)
    assert r.leftover == []
    if r.rc == 0:
        assert "fake: done" in r.out and ompsim_lines(r.err) == [], r.err
        return "runs"
    lines = ompsim_lines(r.err)
    assert len(lines) == 1, "%s on %s: expected one ompsim: line\n%s" % (path.name, backend, r.err)
    m = re.match(PREFIX[backend], lines[0])
    # Images no plugin accepts fail later, at the launch, with the runtime's own line.
    return lines[0][m.end():] if m else re.sub(r"0x[0-9a-f]+", "0x…", lines[0])


def test_corpus_gives_the_same_outcome_on_both_backends(fake, tmp_path):
    image = fake[1]
    corpus = cases(image.read_bytes())
    assert len(corpus) >= 50
    differ, refused = [], 0
    for name, data in sorted(corpus.items()):
        path = tmp_path / (name + ".img")
        path.write_bytes(data)
        sim, host = outcome(fake, "sim", path), outcome(fake, "ours-host", path)
        if sim != host:
            differ.append("%s:\n  sim:       %s\n  ours-host: %s" % (name, sim, host))
        refused += sim != "runs"
    assert not differ, "backends disagree on %d of %d images:\n%s" % (len(differ), len(corpus), "\n".join(differ))
    assert refused >= len(corpus) - 3, "most of the corpus is corrupt enough to be refused"
