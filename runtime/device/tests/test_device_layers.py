"""The device runtime's folders are layers that call down only.

libomp/ (libomp's entry points) is at the bottom; vgpu/, the virtual GPU
(grids, blocks, fibers, warps, the GPU device runtime's hardware), sits on
it; the GPU ABI (gpu-abi/), the ompx API (ompx/) and ompx_bare's fork
(bare/) sit above the virtual GPU, and so does the device heap under the
checker (memcheck/), which names GPU threads. A file that includes a header of a layer
above its own (the virtual GPU reaching into the GPU ABI's launch state,
say) makes a circle, and fails here naming the file and the header. So does
a C++ file of the tree over 600 lines.
"""
import os
import re

import pytest

from ompsim_base import paths

DEVICE = os.path.join(paths.ROOT, "runtime", "device")
# What each folder may include from its sibling folders.
BELOW = {
    "libomp": set(),
    "math": set(),
    "vgpu": {"libomp"},
    "gpu-abi": {"libomp", "vgpu"},
    "ompx": {"libomp", "vgpu"},
    "bare": {"libomp", "vgpu", "gpu-abi"},
    "memcheck": {"vgpu"},
}
SOURCE = re.compile(r"\.(c|cc|cpp|h|hpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"\.\./([^/"]+)/', re.M)
MAX_LINES = 600


def layer_files():
    for layer in sorted(BELOW):
        folder = os.path.join(DEVICE, layer)
        for dirpath, _, names in os.walk(folder):
            for name in sorted(names):
                if SOURCE.search(name):
                    yield layer, os.path.join(dirpath, name)


def test_every_folder_of_the_device_runtime_is_a_layer():
    folders = {n for n in os.listdir(DEVICE) if os.path.isdir(os.path.join(DEVICE, n))}
    assert folders - {"tests"} == set(BELOW), "a folder of runtime/device/ without its place in BELOW"


@pytest.mark.parametrize("layer", sorted(BELOW))
def test_a_layer_includes_only_the_layers_below_it(layer):
    bad = []
    for owner, path in layer_files():
        if owner != layer:
            continue
        with open(path, encoding="utf-8") as f:
            for target in INCLUDE.findall(f.read()):
                if target not in BELOW[layer]:
                    bad.append("%s includes ../%s/" % (os.path.relpath(path, paths.ROOT), target))
    assert not bad, "\n".join(bad)


def test_no_cpp_file_of_the_tree_is_over_600_lines():
    skip = {"build", ".git", "out", "__pycache__"}
    long = []
    for top in ("runtime", "simulator", "plugins", "tools", "bench", "fuzz"):
        for dirpath, dirnames, names in os.walk(os.path.join(paths.ROOT, top)):
            dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith("build")]
            for name in names:
                if name.endswith((".cpp", ".h")):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        lines = sum(1 for _ in f)
                    if lines > MAX_LINES:
                        long.append("%s: %d lines" % (os.path.relpath(path, paths.ROOT), lines))
    assert not long, "\n".join(long)
