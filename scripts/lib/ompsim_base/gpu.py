"""GPU offload architectures (`--gpu=sm_XX|gfxXXX` of `ompsim cc`, the gpu-build matrix
columns): the device triple of an architecture and the PTX version clang-22 needs."""
import os
import re
import shutil


def ptx_feature_flags(arch, args):
    """`--cuda-feature=+ptxNN` for an NVIDIA `arch` when clang-22 would find no CUDA.

    Without a CUDA installation clang-22 targets PTX 4.2, which no GPU that
    OpenMP offloads to accepts ("PTX version 4.2 does not support target
    'sm_90'"); device-only builds need no CUDA otherwise. Empty when CUDA is
    installed (clang then takes its version) or the command line chooses.
    """
    m = re.match(r"sm_(\d+)(a?)$", arch)
    if not m or any(a.startswith(("--cuda-path", "--cuda-feature")) for a in args):
        return []
    if shutil.which("ptxas") or any(os.path.isdir(d) for d in ("/usr/local/cuda", "/usr/lib/cuda")):
        return []
    n = int(m.group(1))
    # The lowest PTX version of each generation: sm_90 7.8, sm_90a 8.0, sm_100 8.6, sm_120 8.7.
    ptx = 87 if n >= 120 else 86 if n >= 100 else 80 if m.group(2) else 78 if n >= 89 else 70
    return ["--cuda-feature=+ptx%d" % ptx]


def triple(arch):
    """The device triple of a GPU architecture: NVIDIA's for sm_XX, AMD's otherwise."""
    return "nvptx64-nvidia-cuda" if arch.startswith("sm_") else "amdgcn-amd-amdhsa"
