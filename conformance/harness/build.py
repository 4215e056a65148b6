"""Compiles conformance programs, once per (program, translate, image), shared by columns.

Builds land in ``<out>/build/<program>-<translate>-<image>-<key>/``; the key hashes
everything that changes the binary (sources, inputs, flags, compiler and ompsim tool
files), so a stale build is never reused. Each build is made in a temporary folder and
renamed into place under a file lock, which keeps pytest-xdist workers from racing.
"""
import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

from ompsim_base import backends, paths
from ompsim_base import toolchain as llvm_toolchain

from . import process

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")
CC_MODULE = os.path.join(paths.ROOT, "scripts", "lib", "ompsim_cli", "cc.py")
FLANG = paths.tool("flang")
COMMON_FLAGS = ["-O1"]
CXX_FLAGS = ["-std=c++17"]
FORTRAN_FLAGS = ["-fopenmp-version=51"]
COMPILE_TIMEOUT = 600


@dataclasses.dataclass
class Build:
    """A finished build: `ok` with `exe`, or not ok with the compiler's `output`."""
    ok: bool
    directory: str
    exe: str
    output: str
    command: str
    device_runtime: bool


def have_ompsim_cc():
    """True once `ompsim cc` exists (scripts/lib/ompsim_cli/cc.py)."""
    return os.path.exists(CC_MODULE)


#: Build images for the GPU backends (the backend name: NVIDIA and AMD builds differ).
GPU_IMAGES = ("cuda-upstream", "amdgpu-upstream", *backends.SIM_GPU_ARCH)


def build_image(backend, image_kind):
    """The image a build is keyed on: elf, ir, or the GPU backend's name."""
    return backend if image_kind == "gpu" else image_kind


@functools.lru_cache(maxsize=None)
def gpu_arch(image):
    """sm_XX / gfxXXX of the first GPU here (sim's GPU columns: their own), or None."""
    if image in backends.SIM_GPU_ARCH:
        return backends.SIM_GPU_ARCH[image]
    try:
        if image == "cuda-upstream":
            r = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30)
            cap = r.stdout.split()[0] if r.returncode == 0 and r.stdout.split() else ""
            return "sm_" + cap.replace(".", "") if cap else None
        r = subprocess.run(["rocminfo"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30)
        for word in r.stdout.split():
            if word.startswith("gfx"):
                return word
    except (OSError, subprocess.SubprocessError):
        return None
    return None


def _driver(language):
    if language == "fortran":
        return [FLANG, *FORTRAN_FLAGS]
    return [paths.tool("clang++" if language == "c++" else "clang")]


def toolchain(language, translate, image):
    """(driver argv prefix, links ompsim's device runtime, None) or (None, False, why unavailable).

    `ompsim cc` builds every cell once it exists and its outputs are built; until then
    native cells use clang-22 / flang-22 with the same offload flags, and pass cells are
    unavailable.
    """
    if image in GPU_IMAGES:
        arch = gpu_arch(image)
        if not arch:
            return None, False, "cannot tell the GPU architecture for %s" % image
        if image in backends.SIM_GPU_ARCH:
            # sim runs the GPU's IR: `ompsim cc` links it without a GPU device runtime (for
            # Fortran it runs flang-22's jobs as -fopenmp-target-jit would, fortran_gpu.py).
            if not have_ompsim_cc():
                return None, False, "`ompsim cc` not available yet (%s missing)" % CC_MODULE
            return ([OMPSIM, "cc", "--translate=" + translate, "--gpu=" + arch]
                    + (FORTRAN_FLAGS if language == "fortran" else [])), False, None
        if translate == "pass":
            if not have_ompsim_cc():
                return None, False, "`ompsim cc` not available yet (%s missing)" % CC_MODULE
            return ([OMPSIM, "cc", "--translate=pass", "--gpu=" + arch]
                    + (FORTRAN_FLAGS if language == "fortran" else [])), False, None
        return [*_driver(language), "-fopenmp", "--offload-arch=" + arch], False, None
    # `ompsim cc` would build the project itself when its outputs are missing; the harness
    # never builds behind the caller's back (`ompsim matrix` builds first), so it checks here.
    missing = [p for p in ([paths.DEVICE_RUNTIME] + ([paths.PASS_PLUGIN] if translate == "pass" else []))
               if not os.path.exists(p)]
    if have_ompsim_cc() and not missing:
        return ([OMPSIM, "cc", "--translate=" + translate, "--image=" + image]
                + (FORTRAN_FLAGS if language == "fortran" else [])), True, None
    if translate == "pass":
        if not have_ompsim_cc():
            return None, False, "`ompsim cc` not available yet (%s missing)" % CC_MODULE
        return None, False, "ompsim not built (%s missing)" % missing[0]
    cmd = [*_driver(language), "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"]
    if image == "ir":
        cmd += ["-fopenmp-target-jit", "-Wl,--device-compiler=-fuse-ld=lld"]
    return cmd, False, None


def _file_stamp(path):
    try:
        st = os.stat(path)
        return "%s:%d:%d" % (path, st.st_size, st.st_mtime_ns)
    except OSError:
        return path + ":missing"


def _dir_digest(directory):
    h = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for n in sorted(files):
            p = os.path.join(root, n)
            h.update(p.encode())
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def substitute(text, source_dir, out_dir):
    """Applies %S (program folder), %inputs (its inputs/ folder) and %T (build folder)."""
    return (text.replace("%inputs", os.path.join(source_dir, "inputs"))
            .replace("%S", source_dir).replace("%T", out_dir))


def _language_flags(language):
    return COMMON_FLAGS + (CXX_FLAGS if language == "c++" else [])


def build(spec, translate, image, out_root):
    """Builds `spec` for (translate, image) or reuses the cached build. Returns (Build, None)
    or (None, why the toolchain is unavailable)."""
    prefix, device_runtime, why = toolchain(spec.language, translate, image)
    if why:
        return None, why
    source_dir = spec.source_dir or os.path.dirname(os.path.abspath(spec.path))
    h = hashlib.sha256()
    for src in [spec.path, *spec.extra_sources]:
        try:
            with open(src, "rb") as f:
                h.update(f.read())
        except OSError:
            h.update(("missing:" + src).encode())   # the compiler names it
    _hash_helpers(h, source_dir)
    ident = [*prefix, *_language_flags(spec.language), translate, image, spec.action, *spec.build_args,
             *_tool_stamps(prefix[0])]
    h.update("\0".join(ident).encode())
    key = "%s-%s-%s-%s" % (re.sub(r"[^\w.+-]", "_", spec.name), translate, image, h.hexdigest()[:12])
    build_root = os.path.join(out_root, "build")
    os.makedirs(build_root, exist_ok=True)
    final = os.path.join(build_root, key)

    def make():
        tmp = tempfile.mkdtemp(prefix=key + ".tmp-", dir=build_root)
        try:
            _compile_into(spec, prefix, source_dir, tmp, device_runtime)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    _made_once(final, os.path.join(final, "build.json"), make)
    with open(os.path.join(final, "build.json")) as f:
        rec = json.load(f)
    # Commands and messages name the temporary folder the build was made in; show the final one.
    tmp_name = rec.get("tmp_dir", "")
    fix = (lambda t: t.replace(tmp_name, final)) if tmp_name else (lambda t: t)
    return Build(ok=rec["ok"], directory=final, exe=os.path.join(final, "prog"), output=fix(rec["output"]),
                 command=fix(rec["command"]), device_runtime=device_runtime), None


#: How a lit test's compile commands spell the working folder they run in (build_lit).
LIT_WORKDIR = "@OMPSIM_LIT_WORKDIR@"
#: A lit test's own files its compiles may read beside it (headers, helper sources).
_LIT_NEIGHBOURS = (".h", ".hpp", ".hh", ".inc", ".def", ".c", ".cpp", ".f90", ".F90", ".cu")


@dataclasses.dataclass
class LitBuild:
    """A lit test's compiles, made once: `directory` is laid out as a cell's working
    folder after them; `steps` is [(command, exit code, output)], a failing one last."""
    directory: str
    steps: list


def _hash_helpers(h, source_dir):
    """Adds the program's helper folder (inputs/ or Inputs/) to the build key `h`."""
    for helpers in ("inputs", "Inputs"):
        if os.path.isdir(os.path.join(source_dir, helpers)):
            h.update(_dir_digest(os.path.join(source_dir, helpers)).encode())


def _made_once(final, record, make):
    """Calls make() unless `record` exists, under `final`'s file lock: pytest-xdist workers
    and columns needing one build wait for the first to make it."""
    with open(final + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not os.path.exists(record):
                make()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _compile(argv, cwd, env):
    """(exit status, output) of one compile step, in its own process group: a timeout kills
    the driver's jobs (clang -cc1, the linker wrapper) too, and the output says so."""
    rc, out, _, timed_out = process.communicate(argv, COMPILE_TIMEOUT, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                                cwd=cwd, env=env)
    if timed_out:
        out += "error: compiler timed out after %ds\n" % COMPILE_TIMEOUT
    return rc, out


def _tool_stamps(prefix):
    return [_file_stamp(p) for p in (prefix, CC_MODULE, paths.PASS_PLUGIN, paths.DEVICE_RUNTIME, paths.DEVICE_API,
                                     os.path.join(paths.OMPX_INCLUDE, "ompx.h"), os.path.abspath(__file__))]


def build_lit(spec, commands, out_root, env):
    """Runs the compile commands before a lit test's first run step, once per (commands,
    sources, tools): columns whose compiles read the same (sim and ours-host both run
    `ompsim cc --image=elf`) share them, and so does a second run of the matrix.

    `commands` spell the cell's working folder LIT_WORKDIR; they run in the shared folder
    `<out>/build/lit-<program>-<key>/`, made in place under a file lock (no rename: a
    build may record its own paths, a library's rpath or DT_NEEDED).
    """
    source_dir = os.path.dirname(os.path.abspath(spec.path))
    h = hashlib.sha256()
    h.update("\0".join([*commands, *_tool_stamps(paths.tool("clang")), _file_stamp(FLANG)]).encode())
    for name in sorted(os.listdir(source_dir)):
        path = os.path.join(source_dir, name)
        if name.endswith(_LIT_NEIGHBOURS) and os.path.isfile(path):
            h.update(name.encode())
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    _hash_helpers(h, source_dir)
    key = "lit-%s-%s" % (re.sub(r"[^\w.+-]", "_", spec.name), h.hexdigest()[:16])
    build_root = os.path.join(out_root, "build")
    os.makedirs(build_root, exist_ok=True)
    final = os.path.join(build_root, key)
    record = os.path.join(final, "build.json")

    def make():
        shutil.rmtree(final, ignore_errors=True)   # an interrupted build's remains
        os.makedirs(os.path.join(final, "Output"))
        steps = []
        for cmd in commands:
            cmd = cmd.replace(LIT_WORKDIR, final)
            rc, out = _compile(["bash", "-o", "pipefail", "-c", cmd], final, env)
            steps.append((cmd, rc, out))
            if rc != 0:
                break
        with open(record + ".tmp", "w") as f:
            json.dump({"steps": steps}, f, indent=1)
        os.rename(record + ".tmp", record)
    _made_once(final, record, make)
    with open(record) as f:
        return LitBuild(directory=final, steps=[tuple(s) for s in json.load(f)["steps"]])


def mirror(build_dir, workdir):
    """Copies what a lit build made into a cell's working folder (copies, not links: a run
    step writing to a file the build made must not change the shared one)."""
    for root, dirs, files in os.walk(build_dir):
        rel = os.path.relpath(root, build_dir)
        target = os.path.normpath(os.path.join(workdir, rel))
        os.makedirs(target, exist_ok=True)
        for name in files:
            if rel == "." and name == "build.json":
                continue
            src = os.path.join(root, name)
            if os.path.islink(src):
                os.symlink(os.readlink(src), os.path.join(target, name))
            else:
                shutil.copy2(src, os.path.join(target, name))


def _compile_into(spec, prefix, source_dir, out_dir, device_runtime):
    steps = []
    flags = _language_flags(spec.language)
    for lib, args in spec.shlibs:
        args = [substitute(a, source_dir, out_dir) for a in args]
        steps.append([*prefix, *flags, "-fPIC", "-shared", *args, "-o", os.path.join(out_dir, lib)])
    extra = [substitute(a, source_dir, out_dir) for a in spec.build_args]
    main = [*prefix, *flags, os.path.abspath(spec.path), *spec.extra_sources, *extra]
    # `dg-do compile` builds an object only; everything else links the program.
    main += ["-c", "-o", os.path.join(out_dir, "prog.o")] if spec.action == "compile" else ["-o", os.path.join(out_dir, "prog")]
    if spec.shlibs:
        # The build folder is renamed after linking, so libraries are found next to the program.
        main += ["-L" + out_dir, "-Wl,-rpath,$ORIGIN"]
    steps.append(main)
    output, ok, shown = "", True, []
    for cmd in steps:
        shown.append(" ".join(cmd))
        rc, out = _compile(cmd, out_dir, llvm_toolchain.environment())
        output += out
        ok = rc == 0
        if not ok:
            break
    with open(os.path.join(out_dir, "build.json"), "w") as f:
        json.dump({"ok": ok, "output": output, "command": "\n".join(shown), "tmp_dir": out_dir,
                   "device_runtime": device_runtime}, f, indent=1)
