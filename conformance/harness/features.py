"""Backend capabilities as named features, and the boolean expressions headers use.

A header never names a list of backends; it names features (``sim``,
``translate=native``, ``separate-address-space`` ...) and combines them with
``&&``, ``||``, ``!`` and parentheses. Every name must be in KNOWN_FEATURES: a
misspelt feature would otherwise silently evaluate to false.
"""
import re

#: The matrix columns (must match ompsim_base.backends.BACKENDS).
BACKENDS = ("sim", "sim-ir", "sim-nvptx", "sim-amdgcn", "ours-host", "host-upstream", "cuda-upstream",
            "amdgpu-upstream")
#: sim's columns that run a GPU's device code (nvptx64, amdgcn IR), retargeted for its CPU.
SIM_GPU_BACKENDS = ("sim-nvptx", "sim-amdgcn")
#: Compile-only columns: device-only builds for a GPU architecture, checked without a GPU.
GPU_BUILD_BACKENDS = ("gpu-build:sm_90", "gpu-build:gfx90a")
#: Every column a matrix may name.
ALL_BACKENDS = BACKENDS + GPU_BUILD_BACKENDS
#: The translation axis.
TRANSLATIONS = ("pass", "native")

#: Every feature name a header may use, with what it means (shown in the README and report).
KNOWN_FEATURES = {
    **{b: "the %s backend" % b for b in BACKENDS},
    **{b: "the compile-only %s column (device code for %s, never run)" % (b, b.split(":")[1])
       for b in GPU_BUILD_BACKENDS},
    "gpu-build": "a compile-only GPU column: device code is built and checked, not run",
    "host-offload": "device code for the x86_64 host-offload target (sim, sim-ir, ours-host, host-upstream)",
    "nvptx": "device code for NVIDIA GPUs (nvptx64-nvidia-cuda)",
    "amdgcn": "device code for AMD GPUs (amdgcn-amd-amdhsa)",
    "translate=pass": "device code rewritten by ompsim's indirect-call pass",
    "translate=native": "device code as the compiler emits it",
    "image=elf": "device image is an ELF shared object",
    "image=ir": "device image is LLVM bitcode, JIT-compiled at load",
    "image=gpu": "device image is GPU code",
    "separate-address-space": "device memory and code live outside the host process (lit's `gpu` in user suites)",
    "shared-address-space": "device code runs inside the host process (host addresses are callable)",
    "ompsim-runtime": "the host offload runtime is ompsim's",
    "ompt": "the offload runtime reports target events to an OpenMP tool (OMPT), as stock's does",
    "ompsim-device-runtime": "the device image links ompsim's device runtime (translate API callable)",
    "gpu": "a real GPU",
    "multi-device": "two or more devices can be configured (header ENV may set OMPSIM_NUM_DEVICES)",
    "usm": "requires unified_shared_memory is honoured",
    "map-check": "the run is under ompsim's checkers (`ompsim matrix --map-check` on sim, sim-nvptx and sim-amdgcn: the map checker, and the GPU checks of GPU images): a report fails a pass",
    "c": "the program is C",
    "c++": "the program is C++",
    "fortran": "the program is Fortran",
}


class ExprError(ValueError):
    """A malformed feature expression or an unknown feature name."""


_TOKEN = re.compile(r"\s*(?:(&&|\|\||!|\(|\))|([A-Za-z_][A-Za-z0-9_+.=:-]*))")


def _tokenize(text):
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError("unexpected character %r in feature expression %r" % (text[pos:].strip()[:1], text))
        tokens.append(m.group(1) or m.group(2))
        pos = m.end()
    return tokens


class Expr:
    """A parsed feature expression; evaluate with ``expr(features)``."""

    def __init__(self, text):
        self.text = text.strip()
        self._tokens = _tokenize(self.text)
        if not self._tokens:
            raise ExprError("empty feature expression")
        self._pos = 0
        self.names = set()
        self._tree = self._or()
        if self._pos != len(self._tokens):
            raise ExprError("unexpected %r in feature expression %r" % (self._tokens[self._pos], self.text))
        unknown = sorted(n for n in self.names if n not in KNOWN_FEATURES and n not in ("true", "false"))
        if unknown:
            raise ExprError("unknown feature %s in %r (known: %s)"
                            % (", ".join(repr(u) for u in unknown), self.text, ", ".join(sorted(KNOWN_FEATURES))))

    # Grammar: or := and ('||' and)* ; and := unary ('&&' unary)* ; unary := '!' unary | atom
    def _peek(self):
        return self._tokens[self._pos] if self._pos < len(self._tokens) else None

    def _take(self):
        tok = self._peek()
        if tok is None:
            raise ExprError("feature expression %r ends early" % self.text)
        self._pos += 1
        return tok

    def _or(self):
        node = self._and()
        while self._peek() == "||":
            self._take()
            node = ("or", node, self._and())
        return node

    def _and(self):
        node = self._unary()
        while self._peek() == "&&":
            self._take()
            node = ("and", node, self._unary())
        return node

    def _unary(self):
        tok = self._take()
        if tok == "!":
            return ("not", self._unary())
        if tok == "(":
            node = self._or()
            if self._take() != ")":
                raise ExprError("missing ')' in feature expression %r" % self.text)
            return node
        if tok in ("&&", "||", ")"):
            raise ExprError("unexpected %r in feature expression %r" % (tok, self.text))
        self.names.add(tok)
        return ("name", tok)

    def __call__(self, features):
        def ev(node):
            kind = node[0]
            if kind == "name":
                return node[1] == "true" or (node[1] != "false" and node[1] in features)
            if kind == "not":
                return not ev(node[1])
            if kind == "and":
                return ev(node[1]) and ev(node[2])
            return ev(node[1]) or ev(node[2])
        return ev(self._tree)

    def __repr__(self):
        return "Expr(%r)" % self.text


def backend_features(backend, translate, language=None, device_runtime=False, map_check=False):
    """The set of true features for one matrix column (and optionally one program's language).

    `device_runtime` says whether the build links ompsim's device runtime (an
    `ompsim cc` build); it is a property of the build, not of the backend.
    """
    if backend not in ALL_BACKENDS:
        raise ValueError("unknown backend %r" % backend)
    if translate not in TRANSLATIONS:
        raise ValueError("unknown translation %r" % translate)
    f = {backend, "translate=" + translate}
    if backend in GPU_BUILD_BACKENDS:
        # A GPU's properties, without running anything: the code is what a GPU would load.
        f |= {"gpu-build", "image=gpu", "separate-address-space", "multi-device",
              "nvptx" if ":sm_" in backend else "amdgcn"}
    else:
        if backend == "sim-ir":
            f.add("image=ir")
        elif backend in ("cuda-upstream", "amdgpu-upstream") or backend in SIM_GPU_BACKENDS:
            f.add("image=gpu")
        else:
            f.add("image=elf")
        if backend in ("sim", "sim-ir", "cuda-upstream", "amdgpu-upstream") or backend in SIM_GPU_BACKENDS:
            f.add("separate-address-space")
        else:
            f.add("shared-address-space")
        if backend in ("sim", "sim-ir", "ours-host") or backend in SIM_GPU_BACKENDS:
            f.add("ompsim-runtime")
        # Every runtime that runs programs has OMPT's target callbacks: stock's and ompsim's.
        f.add("ompt")
        if backend in ("cuda-upstream", "amdgpu-upstream"):
            f.add("gpu")
        if backend in ("cuda-upstream", "sim-nvptx"):
            f.add("nvptx")
        elif backend in ("amdgpu-upstream", "sim-amdgcn"):
            f.add("amdgcn")
        else:
            f.add("host-offload")
        # ompsim's plugins number OMPSIM_NUM_DEVICES devices; stock libomptarget's host plugin
        # has 4, and so has ompsim's by default.
        if backend in ("sim", "sim-ir", "ours-host", "host-upstream") or backend in SIM_GPU_BACKENDS:
            f.add("multi-device")
        # Host code and device code share memory on the host plugins; the simulated device does not.
        if backend in ("ours-host", "host-upstream"):
            f.add("usm")
    if device_runtime:
        f.add("ompsim-device-runtime")
    if map_check:
        f.add("map-check")
    if language:
        f.add(language)
    assert f <= set(KNOWN_FEATURES), "feature set uses names missing from KNOWN_FEATURES: %s" % (f - set(KNOWN_FEATURES))
    return f
