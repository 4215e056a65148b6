"""The compiler command `ompsim cc` runs (scripts/lib/ompsim_cli/cc.py documents it): its own
options split off the compiler's arguments, the compiler picked, and the flags added.

Here, not in the CLI, so that the conformance harness runs the same command itself for the
matrix's builds, without starting `ompsim cc` (a Python start) for each.
"""
import os
import re

from . import gpu, paths

#: The host-offload device triple (an ELF shared object, or bitcode with --image=ir).
HOST_OFFLOAD_TRIPLE = "x86_64-pc-linux-gnu"

CXX_EXTENSIONS = (".cpp", ".cc", ".cxx", ".c++", ".cp", ".CPP", ".C", ".hpp", ".hh", ".hxx", ".ii", ".cppm")
FORTRAN_EXTENSIONS = (".f90", ".f95", ".F90", ".F95", ".f03", ".F03", ".f08", ".F08", ".f", ".F", ".for")

#: Driver options whose value is the next argument (so it is not an input file).
OPTIONS_WITH_SEPARATE_VALUE = {
    "-o", "-x", "-I", "-D", "-U", "-L", "-l", "-include", "-imacros", "-isystem", "-idirafter",
    "-iquote", "-iprefix", "-iwithprefix", "-isysroot", "--sysroot", "-MF", "-MT", "-MQ", "-Xlinker",
    "-Xclang", "-Xassembler", "-Xpreprocessor", "-Xopenmp-target", "-Xoffload-linker", "-Xarch_host",
    "-Xarch_device", "-mllvm", "-target", "--target", "-u", "-T", "-z", "-arch", "-module-dependency-dir",
    "-J", "-module-dir", "-ivfsoverlay", "-resource-dir", "-B", "--gcc-toolchain", "-fpass-plugin",
}

#: Options after which clang does not link.
NO_LINK_OPTIONS = {"-c", "-S", "-E", "-M", "-MM", "-fsyntax-only", "-emit-llvm", "--precompile",
                   "-###", "--version", "-dumpversion", "-dumpmachine", "--help", "-print-search-dirs"}


class UsageError(Exception):
    """A bad `ompsim cc` option (not a compiler argument)."""


class Settings:
    """The `ompsim cc` options, split off the compiler's arguments."""

    def __init__(self):
        self.translate = "pass"
        self.image = "elf"
        self.gpu = None     # the GPU architectures as given (a comma list), or None
        self.gpus = []      # the same, one architecture an item


def _is_gpu_arch(arch):
    return arch.startswith("sm_") or arch.startswith("gfx")


def split_options(argv):
    """Returns (Settings, compiler arguments). Raises UsageError on a bad value."""
    s = Settings()
    rest = []
    it = iter(argv)
    for a in it:
        name, eq, value = a.partition("=")
        if name in ("--translate", "--image", "--gpu"):
            if not eq:
                value = next(it, None)
                if value is None:
                    raise UsageError("%s needs a value" % name)
            if name == "--translate":
                if value not in ("pass", "native"):
                    raise UsageError("--translate=%s: expected pass or native" % value)
                s.translate = value
            elif name == "--image":
                if value not in ("elf", "ir"):
                    raise UsageError("--image=%s: expected elf or ir" % value)
                s.image = value
            else:
                archs = value.split(",")
                if not all(_is_gpu_arch(arch) for arch in archs) or len(set(archs)) != len(archs):
                    raise UsageError("--gpu=%s: expected sm_XX (NVIDIA) or gfxXXX (AMD), or a comma list of "
                                     "different ones" % value)
                s.gpu, s.gpus = value, archs
            continue
        rest.append(a)
    if not s.gpu:
        archs = [arch for a in rest if a.startswith("--offload-arch=") for arch in a.partition("=")[2].split(",")]
        if archs and all(_is_gpu_arch(arch) for arch in archs) and len(set(archs)) == len(archs):
            s.gpu, s.gpus = ",".join(archs), archs
    if s.gpu and s.image == "ir":
        raise UsageError("--image=ir is for the host-offload target; it cannot be combined with --gpu")
    if not s.gpu and asks_for_jit(rest):
        s.image = "ir"
    return s, rest


def asks_for_jit(args):
    """True when the compiler arguments choose a bitcode device image: the last of
    `-fopenmp-target-jit` and `-fno-openmp-target-jit` is the former."""
    for a in reversed(args):
        if a == "-fopenmp-target-jit":
            return True
        if a == "-fno-openmp-target-jit":
            return False
    return False


def scan(args):
    """Returns (inputs, languages given with -x, links?) for a compiler command line."""
    inputs, langs = [], []
    links = True
    i = 0
    while i < len(args):
        a = args[i]
        if a in OPTIONS_WITH_SEPARATE_VALUE:
            if a == "-x" and i + 1 < len(args):
                langs.append(args[i + 1])
            i += 2
            continue
        if a.startswith("-x") and len(a) > 2:
            langs.append(a[2:])
        if a in NO_LINK_OPTIONS:
            links = False
        elif a == "-" or not a.startswith("-"):
            inputs.append(a)
        i += 1
    if not inputs:
        links = False
    return inputs, langs, links


def pick_compiler(inputs, langs):
    """clang-22, clang++-22 or flang-22, from the inputs' extensions and -x."""
    if any(os.path.splitext(f)[1] in FORTRAN_EXTENSIONS for f in inputs) or \
            any(lang.startswith("f95") or lang == "fortran" for lang in langs):
        return paths.tool("flang")
    if any(f.endswith(CXX_EXTENSIONS) for f in inputs) or any("c++" in lang for lang in langs):
        return paths.tool("clang++")
    return paths.tool("clang")


def keeps_gpu_ir(args):
    """True when a compile (-c) of a GPU build carries the device code as IR (not device-only)."""
    return "-c" in args and "--offload-device-only" not in args


def offload_flags(settings, args, links, fortran=False):
    """The flags ompsim cc adds in front of the user's arguments (see the module doc)."""
    flags = []
    if not any(a == "-fopenmp" or a.startswith("-fopenmp=") for a in args):
        flags.append("-fopenmp")
    chooses_target = any(a.startswith("-fopenmp-targets=") or a.startswith("--offload-arch=") or
                         a == "--offload-arch" for a in args)
    if settings.gpu:
        triples = list(dict.fromkeys(gpu.triple(arch) for arch in settings.gpus))
        if not chooses_target:
            flags.append("--offload-arch=" + settings.gpu)
        # The PTX version is given (clang-22 reads it from a CUDA installation
        # and falls back to PTX 4.2 without one), so IR builds need no CUDA;
        # device code alone is a real GPU's, for CUDA's ptxas where one exists.
        # (flang-22 has no --cuda-feature: fortran_gpu.py gives its jobs the version.)
        if not fortran:
            flags += gpu.ptx_feature_flags(settings.gpus, args, real_ptx="--offload-device-only" in args)
        # The device code stays LLVM IR, linked without a GPU device runtime:
        # the simulated device retargets it and serves the runtime's entry
        # points (simulator/src/gpu/). An object (-c) carries the IR such a
        # link takes; device code alone (--offload-device-only -S) stays the
        # GPU's assembly. No compile needs a device library (clang-22's nvptx
        # compile asks for one otherwise).
        # flang-22 has no such flag: fortran_gpu.py runs its jobs as this flag would.
        if (links or keeps_gpu_ir(args)) and not asks_for_jit(args) and not fortran:
            flags.append("-fopenmp-target-jit")
        if "-nogpulib" not in args:
            flags.append("-nogpulib")
        # The device code keeps its calls of malloc, free, calloc and realloc: at -O2
        # clang-22 removes a malloc whose block does not escape, and with it an
        # overrun or a read of what no thread wrote, which the checked device heap
        # would name under OMPSIM_CHECK (docs/gpu-checks.md). (flang-22's device code
        # allocates through the runtime, not these.)
        if not fortran:
            for triple in triples:
                for name in KEPT_HEAP_CALLS:
                    flags += ["-Xopenmp-target=%s" % triple, "-fno-builtin-" + name]
        # The offload link's device LTO (clang-linker-wrapper runs clang-22
        # for the GPU) reads the PTX version again: the same one.
        link_feature = gpu.device_link_feature(settings.gpus, args)
        if links and link_feature and not fortran:
            flags.append("-Wl,--device-compiler=%s=%s" % (gpu.NVPTX_TRIPLE, link_feature))
    else:
        triples = [HOST_OFFLOAD_TRIPLE]
        if not chooses_target:
            flags.append("-fopenmp-targets=" + HOST_OFFLOAD_TRIPLE)
    if settings.translate == "pass":
        # -Xopenmp-target=<triple> reaches only that device's -cc1, so host
        # code is never rewritten. flang-22 lacks -Xopenmp-target; there the
        # plugin loads everywhere and acts only on modules flagged
        # "openmp-device".
        for triple in triples:
            if not fortran:
                flags.append("-Xopenmp-target=%s" % triple)
            flags.append("-fpass-plugin=" + paths.PASS_PLUGIN)
    if not settings.gpu and not fortran:
        # ompsim's <ompx.h> for the device compile only: its kernel-language
        # functions answer as a GPU does (block = team, ...) where clang's
        # header compiles its host fallback into the image (block id 0, ...).
        # The host compile keeps clang's header.
        flags += ["-Xopenmp-target=%s" % HOST_OFFLOAD_TRIPLE, "-I" + paths.OMPX_INCLUDE]
        # CUDA's device math functions that libm lacks (normcdfinv, erfinv,
        # ...), as a GPU's device compile has them from clang's wrappers.
        # -Xopenmp-target carries one argument, so -include takes its joined
        # form (clang accepts it); the host compile never sees the header.
        flags += ["-Xopenmp-target=%s" % HOST_OFFLOAD_TRIPLE, "-include" + paths.DEVICE_MATH_HEADER]
    if settings.image == "ir":
        if not asks_for_jit(args):
            flags.append("-fopenmp-target-jit")
        if links:
            # The JIT image is an LTO link emitting bitcode, which only lld does.
            flags.append("-Wl,--device-compiler=-fuse-ld=lld")
    elif links and not settings.gpu and not chooses_linker(args):
        # The image's link uses the host link's linker, ld.lld-22 (host_link_flags):
        # the clang-22 that links the image gets the host linker's options the
        # driver passes on for lld (-save-temps's --save-temps), which GNU ld refuses.
        flags.append("-Wl,--device-compiler=%s=-fuse-ld=lld" % HOST_OFFLOAD_TRIPLE)
    if links and not settings.gpu:
        # The device's OpenMP API answers (omp_is_initial_device, ...) go
        # into the image itself, hidden, so its calls bind to them before
        # libomp's host answers on every backend.
        flags += ["-Xoffload-linker", "-L" + paths.LIB,
                  "-Xoffload-linker", "--whole-archive",
                  "-Xoffload-linker", "-lompsim-device-api",
                  "-Xoffload-linker", "--no-whole-archive",
                  "-Xoffload-linker", "-lompsim-device",
                  "-Xoffload-linker", "-rpath=" + paths.LIB]
    return flags


#: The device heap's calls a GPU image's device compile keeps (-fno-builtin-NAME).
KEPT_HEAP_CALLS = ("malloc", "free", "calloc", "realloc")


#: Options that choose the host linker; without one, a link uses ld.lld-22.
LINKER_CHOICE = ("-fuse-ld=", "--ld-path=")


def chooses_linker(args):
    """True when the compiler arguments choose the host linker themselves."""
    return any(a.startswith(LINKER_CHOICE) for a in args)


def host_link_flags(links, args=()):
    """Flags after the user's arguments (libraries must follow the objects).

    The host fallback of a target region that calls the translate API needs
    it too (an identity there: the host has no published table); --as-needed
    keeps programs that do not call it free of the library. The host link is
    ld.lld-22's unless the arguments choose a linker: GNU ld reads the symbol
    table of every library an offload program's libomptarget.so needs (libLLVM
    among them), a second of a small program's link that lld does not spend.
    """
    if not links:
        return []
    return (([] if chooses_linker(args) else ["-fuse-ld=lld"])
            + ["-L" + paths.LIB, "-Wl,--push-state,--as-needed", "-lompsim-device",
               "-Wl,--pop-state", "-Wl,-rpath," + paths.LIB])


def command(argv):
    """The full compiler command line for `ompsim cc argv` (raises UsageError)."""
    settings, args = split_options(argv)
    inputs, langs, links = scan(args)
    compiler = pick_compiler(inputs, langs)
    fortran = os.path.basename(compiler).startswith("flang")
    if fortran and len(settings.gpus) > 1:
        raise UsageError("--gpu=%s: a Fortran build takes one GPU architecture (flang-22's jobs are run "
                         "for one)" % settings.gpu)
    if fortran and settings.image == "ir":
        raise UsageError("--image=ir: flang-22 cannot embed a bitcode device image (it has no "
                         "-fopenmp-target-jit); build Fortran with --image=elf (the default), which runs "
                         "on sim, ours-host and host-upstream")
    return ([compiler] + offload_flags(settings, args, links, fortran) + args + host_link_flags(links, args),
            settings, links)


def needs_build(settings, links):
    missing = []
    if settings.translate == "pass" and not os.path.exists(paths.PASS_PLUGIN):
        missing.append(paths.PASS_PLUGIN)
    if links and not settings.gpu:
        missing += [p for p in (paths.DEVICE_RUNTIME, paths.DEVICE_API) if not os.path.exists(p)]
    return missing


#: What the linkers say of a symbol no library defines (ld.bfd, lld).
_UNDEFINED = re.compile(r"undefined (?:reference to|symbol:) [`']?(__kmpc_[A-Za-z0-9_]+)")


def missing_entry_points(stderr_text):
    """The `__kmpc_` symbols a failed link could not resolve, in order, once each."""
    seen = []
    for name in _UNDEFINED.findall(stderr_text):
        if name not in seen:
            seen.append(name)
    return seen


def output_name(argv):
    """The program a link writes (`-o`), or a.out."""
    for i, a in enumerate(argv):
        if a == "-o" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("-o") and len(a) > 2:
            return a[2:]
    return "a.out"


def missing_entry_point_lines(argv, stderr_text):
    """What `ompsim cc argv` adds after a failed host-offload link's output: one line for
    each `__kmpc_` entry point no library provides (one the GPU device-runtime ABI has and
    libompsim-device lacks), naming the symbol and the program."""
    return "".join("ompsim: cc: %s: device code calls %s, which ompsim's device runtime (libompsim-device) "
                   "does not provide\n" % (output_name(argv), name) for name in missing_entry_points(stderr_text))


def direct_command(argv):
    """(the compiler command `ompsim cc argv` runs, whether it is a host-offload link) when
    running it is all ompsim cc does (with missing_entry_point_lines after a failed
    host-offload link); None when it does more or other (a Fortran GPU build runs flang-22's
    jobs itself, fortran_gpu.py; a bad option; a build of ompsim to make first). The harness
    runs it so, without a Python start a build."""
    try:
        cmd, settings, links = command(argv)
    except UsageError:
        return None
    if needs_build(settings, links) or (settings.gpu and os.path.basename(cmd[0]).startswith("flang")):
        return None
    return cmd, links and not settings.gpu
