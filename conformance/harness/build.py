"""Compiles conformance programs, once per (program, translate, image), shared by columns
and kept for later runs.

Builds land in the compile cache, ``<build>/compile-cache/<program>-<translate>-<image>-<key>/``
(OMPSIM_COMPILE_CACHE chooses another folder): every matrix run of one build folder (the
matrix, the suites, CI's steps) shares it. The key hashes the contents of everything that
changes the binary: the sources, the project headers they include, the program's helper
folder, the flags, the compiler's identity and the contents of ompsim's own files the
compile uses (`ompsim cc`, the pass plugin, the device runtime, its headers), so a stale
build is never reused and a rebuild that changes nothing keeps the cache. Each build is
made in a temporary folder and renamed into place under a file lock, which keeps
pytest-xdist workers and concurrent runs from racing; each use marks the entry, and the
least recently used entries go when the cache outgrows its limit (prune).
"""
import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time

from ompsim_base import backends, compile_server, gpu, offload_command, paths
from ompsim_base import toolchain as llvm_toolchain

from . import process

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")
CC_MODULE = os.path.join(paths.ROOT, "scripts", "lib", "ompsim_cli", "cc.py")
FLANG = paths.tool("flang")
COMMON_FLAGS = ["-O1"]
CXX_FLAGS = ["-std=c++17"]
FORTRAN_FLAGS = ["-fopenmp-version=51"]
COMPILE_TIMEOUT = 600
#: The compile cache's size limit; prune() removes the least recently used entries beyond it.
CACHE_LIMIT_BYTES = int(os.environ.get("OMPSIM_COMPILE_CACHE_LIMIT_MB", "4096")) * 1024 * 1024
#: Entries used this recently are never pruned (a concurrent run may be using them).
CACHE_KEEP_RECENT_S = 3600


@dataclasses.dataclass
class Build:
    """A finished build: `ok` with `exe`, or not ok with the compiler's `output`."""
    ok: bool
    directory: str
    exe: str
    output: str
    command: str
    device_runtime: bool
    made: bool = False      # compiled by this call, not found in the cache


def have_ompsim_cc():
    """True once `ompsim cc` exists (scripts/lib/ompsim_cli/cc.py)."""
    return os.path.exists(CC_MODULE)


#: The image sim's GPU columns share for a C or C++ program when both run: one binary with
#: an image for each of their GPUs (`ompsim cc --gpu=sm_90,gfx90a`), of which sim-nvptx runs
#: the nvptx64 one and sim-amdgcn the amdgcn one (OMPSIM_SIM_GPU, backends.environment). One
#: compile instead of two spends the host's compile and link once; a session with one of
#: the two builds for its GPU alone. (Fortran builds one GPU a binary, fortran_gpu.py.)
SIM_GPUS = "sim-gpus"
#: Build images for the GPU backends (the backend name: NVIDIA and AMD builds differ).
GPU_IMAGES = ("cuda-upstream", "amdgpu-upstream", *backends.SIM_GPU_ARCH, SIM_GPUS)


def build_image(backend, image_kind, language=None):
    """The image a build is keyed on: elf, ir, the GPU backend's name, or SIM_GPUS for a C
    or C++ program (`language`, given when both of sim's GPU columns run) on one of them."""
    if image_kind != "gpu":
        return image_kind
    if backend in backends.SIM_GPU_ARCH and language in ("c", "c++"):
        return SIM_GPUS
    return backend


@functools.lru_cache(maxsize=None)
def gpu_arch(image):
    """sm_XX / gfxXXX of the first GPU here (sim's GPU columns: their own, SIM_GPUS: theirs
    as a comma list), or None."""
    if image == SIM_GPUS:
        return ",".join(backends.SIM_GPU_ARCH.values())
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
        if image in backends.SIM_GPU_ARCH or image == SIM_GPUS:
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


def cache_root():
    """The compile cache: OMPSIM_COMPILE_CACHE, else <build>/compile-cache."""
    return os.path.abspath(os.environ.get("OMPSIM_COMPILE_CACHE") or os.path.join(paths.BUILD, "compile-cache"))


@functools.lru_cache(maxsize=None)
def _content_digest(path, size, mtime_ns):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _file_digest(path):
    """The digest of a file's contents (read once per process and version), or 'missing'."""
    try:
        st = os.stat(path)
        return "%s:%s" % (path, _content_digest(path, st.st_size, st.st_mtime_ns))
    except OSError:
        return path + ":missing"


def _dir_digest(directory, suffixes=None):
    """The digest of a folder's files (those ending in one of `suffixes`, if given), each by
    its path and contents."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(files):
            if suffixes is None or n.endswith(suffixes):
                h.update(_file_digest(os.path.join(root, n)).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _compiler_identity(driver):
    """A compiler by what it says it is (--version) and its installed file: a package
    upgrade changes the key, touching nothing does not."""
    real = os.path.realpath(driver)
    try:
        st = os.stat(real)
        version = subprocess.run([driver, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return driver + ":missing"
    return "%s:%s:%d:%d:%s" % (driver, real, st.st_size, st.st_mtime_ns, version)


@functools.lru_cache(maxsize=None)
def _ompsim_tools_digest():
    """ompsim's own files a compile uses: `ompsim cc` and the modules it imports, the pass
    plugin, the device runtime and API libraries and the headers device compiles get, this
    harness's build code, and the CUDA installation clang-22 reads its PTX version from."""
    h = hashlib.sha256()
    lib = os.path.join(paths.ROOT, "scripts", "lib")
    for d in (os.path.join(lib, "ompsim_base"), paths.OMPX_INCLUDE, os.path.dirname(paths.DEVICE_MATH_HEADER)):
        h.update(_dir_digest(d, (".py", ".h")).encode())
    for p in (os.path.join(paths.ROOT, "scripts", "ompsim"), os.path.join(lib, "ompsim_command.py"), CC_MODULE,
              os.path.join(lib, "ompsim_cli", "fortran_gpu.py"),
              paths.PASS_PLUGIN, paths.DEVICE_RUNTIME, paths.DEVICE_API, os.path.abspath(__file__)):
        h.update(_file_digest(p).encode())
    cuda = gpu.cuda_installation()
    h.update(("cuda:%s" % cuda).encode())
    if cuda:
        for name in ("version.json", "version.txt"):
            h.update(_file_digest(os.path.join(cuda, name)).encode())
    return h.hexdigest()


_QUOTED_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.M)


def _hash_local_headers(h, sources, include_dirs):
    """Adds the project headers the sources include ("..." includes found beside the
    including file or in an -I folder, and theirs in turn) to the build key `h`."""
    seen, pending = set(), list(sources)
    while pending:
        path = pending.pop()
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError:
            continue
        for name in _QUOTED_INCLUDE.findall(text):
            name = name.decode(errors="replace")
            for d in [os.path.dirname(path), *include_dirs]:
                candidate = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(candidate):
                    if candidate not in seen:
                        seen.add(candidate)
                        pending.append(candidate)
                    break
    for header in sorted(seen):
        h.update(_file_digest(header).encode())


def substitute(text, source_dir, out_dir):
    """Applies %S (program folder), %inputs (its inputs/ folder) and %T (build folder)."""
    return (text.replace("%inputs", os.path.join(source_dir, "inputs"))
            .replace("%S", source_dir).replace("%T", out_dir))


def _language_flags(language):
    return COMMON_FLAGS + (CXX_FLAGS if language == "c++" else [])


def build(spec, translate, image):
    """Builds `spec` for (translate, image) or reuses the cached build. Returns (Build, None)
    or (None, why the toolchain is unavailable)."""
    prefix, device_runtime, why = toolchain(spec.language, translate, image)
    if why:
        return None, why
    source_dir = spec.source_dir or os.path.dirname(os.path.abspath(spec.path))
    h = hashlib.sha256()
    sources = [os.path.abspath(p) for p in [spec.path, *spec.extra_sources]]
    for src in sources:
        h.update(src.encode())          # the path is in the binary too (__FILE__, debug info)
        try:
            with open(src, "rb") as f:
                h.update(f.read())
        except OSError:
            h.update(("missing:" + src).encode())   # the compiler names it
    build_args = [substitute(a, source_dir, "%T") for a in spec.build_args]
    _hash_local_headers(h, sources, [a[2:] for a in build_args if a.startswith("-I") and len(a) > 2])
    _hash_helpers(h, source_dir)
    ident = [*prefix, *_language_flags(spec.language), translate, image, spec.action, *spec.build_args,
             *[lib for lib, _ in spec.shlibs], *[a for _, args in spec.shlibs for a in args],
             *_tool_stamps(prefix[0])]
    h.update("\0".join(ident).encode())
    key = "%s-%s-%s-%s" % (re.sub(r"[^\w.+-]", "_", spec.name), translate, image, h.hexdigest()[:16])
    build_root = cache_root()
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
    made = _made_once(final, os.path.join(final, "build.json"), make)
    with open(os.path.join(final, "build.json")) as f:
        rec = json.load(f)
    # Commands and messages name the temporary folder the build was made in; show the final one.
    tmp_name = rec.get("tmp_dir", "")
    fix = (lambda t: t.replace(tmp_name, final)) if tmp_name else (lambda t: t)
    return Build(ok=rec["ok"], directory=final, exe=os.path.join(final, "prog"), output=fix(rec["output"]),
                 command=fix(rec["command"]), device_runtime=device_runtime, made=made), None


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
    made: bool = False      # compiled by this call, not found in the cache


def _hash_helpers(h, source_dir):
    """Adds the program's helper folder (inputs/ or Inputs/) to the build key `h`."""
    for helpers in ("inputs", "Inputs"):
        if os.path.isdir(os.path.join(source_dir, helpers)):
            h.update(_dir_digest(os.path.join(source_dir, helpers)).encode())


def _made_once(final, record, make):
    """Calls make() unless `record` exists, under `final`'s file lock: pytest-xdist workers
    and columns needing one build wait for the first to make it. Marks the entry used (for
    prune) and returns whether make() ran."""
    with open(final + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            made = not os.path.exists(record)
            if made:
                make()
            else:
                os.utime(record)
            return made
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def prune(root=None, limit=None, now=None):
    """Removes the least recently used entries of the compile cache while it holds more
    than `limit` bytes (CACHE_LIMIT_BYTES), never one used in the last CACHE_KEEP_RECENT_S
    seconds. Returns (entries removed, bytes freed)."""
    root = root or cache_root()
    limit = CACHE_LIMIT_BYTES if limit is None else limit
    now = time.time() if now is None else now
    entries, total = [], 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0, 0
    for name in names:
        path = os.path.join(root, name)
        if name.endswith(".lock") or ".tmp-" in name or not os.path.isdir(path):
            continue
        size = 0
        for base, _, files in os.walk(path):
            for n in files:
                try:
                    size += os.lstat(os.path.join(base, n)).st_size
                except OSError:
                    pass
        try:
            used = os.stat(os.path.join(path, "build.json")).st_mtime
        except OSError:
            used = 0.0
        entries.append((used, path, size))
        total += size
    removed = freed = 0
    for used, path, size in sorted(entries):
        if total <= limit:
            break
        if now - used < CACHE_KEEP_RECENT_S:
            continue
        # The lock file stays: a run waiting on it would otherwise build beside one that
        # opened a new one.
        with open(path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            shutil.rmtree(path, ignore_errors=True)
            fcntl.flock(lock, fcntl.LOCK_UN)
        total -= size
        removed += 1
        freed += size
    return removed, freed


def _compile(argv, cwd, env):
    """(exit status, output) of one compile step, in its own process group: a timeout kills
    the driver's jobs (clang -cc1, the linker wrapper) too, and the output says so.

    The step's LLVM tools run as forks of their compile servers (docs/compile-server.md),
    which outputs, messages and statuses do not show."""
    servers = compile_server.started()
    if servers:
        argv, env = servers.command(argv), servers.environment(env)
    rc, out, _, timed_out = process.communicate(argv, COMPILE_TIMEOUT, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                                cwd=cwd, env=env)
    if timed_out:
        out += "error: compiler timed out after %ds\n" % COMPILE_TIMEOUT
    return rc, out


def _compile_step(cmd, cwd):
    """(exit status, output) of one build step. An `ompsim cc` step runs the compiler command
    ompsim cc would run, here (offload_command.direct_command): the same command, output and
    status, without a Python start of about a tenth of a second a build."""
    direct = offload_command.direct_command(cmd[2:]) if cmd[:2] == [OMPSIM, "cc"] else None
    if not direct:
        return _compile(cmd, cwd, llvm_toolchain.environment())
    compiler, host_offload_link = direct
    rc, out = _compile(compiler, cwd, llvm_toolchain.environment())
    if rc != 0 and host_offload_link:
        out += offload_command.missing_entry_point_lines(cmd[2:], out)
    return rc, out


def _tool_stamps(driver):
    """What a build's tools are: its driver (clang-22, flang-22 or `ompsim cc`), the compilers
    `ompsim cc` runs, and ompsim's own files."""
    own = _compiler_identity(driver) if os.path.dirname(driver) == paths.LLVM_BIN else _file_digest(driver)
    return [own, _compiler_identity(paths.tool("clang")), _compiler_identity(FLANG), _ompsim_tools_digest()]


#: What makes a command more than one program's words to bash: operators, redirections,
#: expansions, globs, comments.
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`\\*?\[\]{}~#!\n]")


def _plain_words(cmd):
    """The words of `cmd` when bash would run it as one program with those arguments
    (quotes aside), else None."""
    if _SHELL_SYNTAX.search(cmd):
        return None
    try:
        return shlex.split(cmd)
    except ValueError:
        return None


def build_lit(spec, commands, env):
    """Runs the compile commands before a lit test's first run step, once per (commands,
    sources, tools): columns whose compiles read the same (sim and ours-host both run
    `ompsim cc --image=elf`) share them, and so does a second run of the matrix.

    `commands` spell the cell's working folder LIT_WORKDIR; they run in the shared folder
    `<compile cache>/lit-<program>-<key>/`, made in place under a file lock (no rename: a
    build may record its own paths, a library's rpath or DT_NEEDED).
    """
    source_dir = os.path.dirname(os.path.abspath(spec.path))
    h = hashlib.sha256()
    h.update("\0".join([*commands, spec.path, *_tool_stamps(paths.tool("clang"))]).encode())
    for name in sorted(os.listdir(source_dir)):
        path = os.path.join(source_dir, name)
        if name.endswith(_LIT_NEIGHBOURS) and os.path.isfile(path):
            h.update(name.encode())
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    _hash_helpers(h, source_dir)
    key = "lit-%s-%s" % (re.sub(r"[^\w.+-]", "_", spec.name), h.hexdigest()[:16])
    build_root = cache_root()
    os.makedirs(build_root, exist_ok=True)
    final = os.path.join(build_root, key)
    record = os.path.join(final, "build.json")

    def make():
        shutil.rmtree(final, ignore_errors=True)   # an interrupted build's remains
        os.makedirs(os.path.join(final, "Output"))
        steps = []
        for cmd in commands:
            cmd = cmd.replace(LIT_WORKDIR, final)
            argv = _plain_words(cmd)
            if argv and argv[:2] == [OMPSIM, "cc"]:
                rc, out = _compile_step(argv, final)   # what `ompsim cc` runs, without bash and Python
            else:
                rc, out = _compile(["bash", "-o", "pipefail", "-c", cmd], final, env)
            steps.append((cmd, rc, out))
            if rc != 0:
                break
        with open(record + ".tmp", "w") as f:
            json.dump({"steps": steps}, f, indent=1)
        os.rename(record + ".tmp", record)
    made = _made_once(final, record, make)
    with open(record) as f:
        return LitBuild(directory=final, steps=[tuple(s) for s in json.load(f)["steps"]], made=made)


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
        rc, out = _compile_step(cmd, out_dir)
        output += out
        ok = rc == 0
        if not ok:
            break
    with open(os.path.join(out_dir, "build.json"), "w") as f:
        json.dump({"ok": ok, "output": output, "command": "\n".join(shown), "tmp_dir": out_dir,
                   "device_runtime": device_runtime}, f, indent=1)
