"""The backends of DESIGN.md, and the environment that wires each one into an unmodified binary."""
import os
import shutil
import subprocess

from . import paths

#: name -> description. The matrix columns.
BACKENDS = {
    "sim": "ompsim runtime, simulated device (ELF image)",
    "sim-ir": "ompsim runtime, simulated device (bitcode image, JIT-compiled)",
    "sim-nvptx": "ompsim runtime, simulated device running NVIDIA GPU code (nvptx64 IR, retargeted)",
    "sim-amdgcn": "ompsim runtime, simulated device running AMD GPU code (amdgcn IR, retargeted)",
    "ours-host": "ompsim runtime, in-process host plugin",
    "host-upstream": "stock libomptarget 22, its host plugin",
    "cuda-upstream": "stock libomptarget, NVIDIA GPU",
    "amdgpu-upstream": "stock libomptarget, AMD GPU",
}

#: Backends that run on ompsim's own runtime, and the plugin each selects.
OURS = {"sim": "sim", "sim-ir": "sim", "sim-nvptx": "sim", "sim-amdgcn": "sim", "ours-host": "host"}

#: The GPU architecture each column builds for: sim's GPU columns a fixed one
#: (docs/gpu-images.md), the real GPUs' whatever GPU the machine has.
SIM_GPU_ARCH = {"sim-nvptx": "sm_90", "sim-amdgcn": "gfx90a"}
#: The GPU the simulated device stands for on sim's GPU columns (OMPSIM_SIM_GPU): of a
#: binary with images for both, it runs that one's.
SIM_GPU = {"sim-nvptx": "nvptx64", "sim-amdgcn": "amdgcn"}


def image_kind(backend):
    """The device-image shape a backend runs: 'elf', 'ir' or 'gpu'."""
    if backend == "sim-ir":
        return "ir"
    if backend in ("cuda-upstream", "amdgpu-upstream") or backend in SIM_GPU_ARCH:
        return "gpu"
    return "elf"


def unavailable_reason(backend):
    """None if the backend can run here, else one line saying why not."""
    if backend in OURS:
        if not os.path.exists(paths.RUNTIME):
            return "ompsim runtime not built (%s missing)" % paths.RUNTIME
        return None
    if backend == "host-upstream":
        if not os.path.exists(os.path.join(paths.LLVM_LIB, "libomptarget.so.22.1")):
            return "stock libomptarget 22 not installed (liboffload-22-dev)"
        return None
    if backend == "cuda-upstream":
        smi = shutil.which("nvidia-smi")
        if not smi:
            return "no NVIDIA GPU: nvidia-smi not found"
        r = subprocess.run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or "GPU" not in r.stdout:
            return "no NVIDIA GPU: nvidia-smi lists none"
        return None
    if backend == "amdgpu-upstream":
        if not os.path.exists("/dev/kfd"):
            return "no AMD GPU: /dev/kfd not present"
        return None
    return "unknown backend %r" % backend


def environment(backend, base=None):
    """The environment a program runs under on `backend`.

    On ompsim's backends, OMP_TARGET_OFFLOAD defaults to MANDATORY so a host
    fallback never hides a device failure (an explicit setting is kept).
    """
    env = dict(os.environ if base is None else base)
    if backend in OURS:
        # OMPSIM_SANITIZER_PRELOAD (scripts/sanitizers): a sanitizer runtime that
        # must come before the instrumented runtime in the preload list.
        env["LD_PRELOAD"] = ":".join(filter(None, [env.get("OMPSIM_SANITIZER_PRELOAD", ""),
                                                   paths.RUNTIME, env.get("LD_PRELOAD", "")]))
        env["LD_LIBRARY_PATH"] = ":".join(filter(None, [paths.LIB, env.get("LD_LIBRARY_PATH", "")]))
        env["OMPSIM_PLUGINS"] = OURS[backend]
        env.setdefault("OMPSIM_LIB_DIR", paths.LIB)
        env.setdefault("OMP_TARGET_OFFLOAD", "MANDATORY")
        if backend in SIM_GPU:
            env["OMPSIM_SIM_GPU"] = SIM_GPU[backend]
    elif backend == "host-upstream":
        env["LD_LIBRARY_PATH"] = ":".join(filter(None, [paths.LLVM_LIB, env.get("LD_LIBRARY_PATH", "")]))
        env.setdefault("OMP_TARGET_OFFLOAD", "MANDATORY")
    return env
