"""GPU offload architectures (`--gpu=sm_XX|gfxXXX` of `ompsim cc`, the gpu-build matrix
columns): the device triple of an architecture, the PTX version clang-22 is given, and
NVIDIA's CUDA installation where one exists."""
import os
import re

#: The PTX version clang-22 takes from the newest CUDA it knows (CUDA 13.0): what an
#: nvptx64 build gets where CUDA is installed, and what ompsim gives it everywhere.
PTX_VERSION = 88

#: Architectures that need a newer PTX version than PTX_VERSION (LLVM 22's NVPTX
#: backend: "Minimum required PTX version is 9.0").
_NEWER_PTX = ((re.compile(r"sm_(88|110[af]?)$"), 90),)

#: Where clang-22 looks for CUDA when no --cuda-path is given.
CUDA_CANDIDATES = ("/usr/local/cuda", "/usr/lib/cuda")


def ptx_version(arch):
    """The PTX version (e.g. 88 for 8.8) an nvptx64 build for `arch` is given."""
    for pattern, version in _NEWER_PTX:
        if pattern.match(arch):
            return version
    return PTX_VERSION


def cuda_installation():
    """The CUDA installation a real-PTX build would use, or None.

    One of CUDA_CANDIDATES with an executable bin/ptxas. A ptxas on PATH alone does not
    count: a wrapper into a removed (or hidden) toolkit is no installation.
    """
    for root in CUDA_CANDIDATES:
        if os.access(os.path.join(root, "bin", "ptxas"), os.X_OK):
            return os.path.realpath(root)
    return None


def ptx_feature_flags(archs, args, real_ptx=False):
    """`--cuda-feature=+ptxNN` for an NVIDIA architecture among `archs` (one, a comma list or
    a list): the build needs no CUDA installation.

    clang-22 takes the PTX version from the CUDA installation it finds and targets PTX 4.2
    without one, which no GPU that OpenMP offloads to accepts ("PTX version 4.2 does not
    support target 'sm_90'"). So a build whose device code stays LLVM IR (the simulated
    GPU's, `ompsim cc --gpu`) is always given `ptx_version(arch)`, and gives the same IR
    with or without CUDA. A build whose PTX goes on to CUDA's ptxas (`real_ptx`) takes
    the installation's own version where one exists, as its ptxas accepts exactly that.
    Several NVIDIA architectures get the newest of their versions (the driver gives one
    to every nvptx64 job). Empty for AMD architectures and where the command line chooses
    (--cuda-path, --cuda-feature).
    """
    nvidia = [a for a in (archs.split(",") if isinstance(archs, str) else archs) if re.match(r"sm_\d+[af]?$", a)]
    if not nvidia:
        return []
    if any(a.startswith(("--cuda-path", "--cuda-feature")) for a in args):
        return []
    if real_ptx and cuda_installation():
        return []
    return ["--cuda-feature=+ptx%d" % max(ptx_version(a) for a in nvidia)]


def device_link_feature(archs, args):
    """The device compiler option clang-linker-wrapper needs to link the NVIDIA device code
    of `archs` (as ptx_feature_flags takes them).

    The offload link runs clang-22 again for the device (its LTO), which reads the PTX
    version from CUDA as the compile did: it gets the same `ptx_feature_flags`, as
    `--cuda-feature=+ptxNN` (for `--device-compiler=<triple>=...`), or None.
    """
    flags = ptx_feature_flags(archs, args)
    return flags[0] if flags else None


#: The device triples of NVIDIA's and AMD's GPUs.
NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
AMDGCN_TRIPLE = "amdgcn-amd-amdhsa"


def triple(arch):
    """The device triple of a GPU architecture: NVIDIA's for sm_XX, AMD's otherwise."""
    return NVPTX_TRIPLE if arch.startswith("sm_") else AMDGCN_TRIPLE
