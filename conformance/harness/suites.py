"""Test suites users bring (`--suite DIR`): discovery, per-file style, and expectations.

Every program file under a suite folder is read in the style its text shows:

* ompsim's own header language (a ``CHECKS:`` line; see header.py);
* LLVM lit (``RUN:`` lines, as in LLVM's offload/test): the RUN lines are kept and
  expanded per column by the runner; ``REQUIRES``/``UNSUPPORTED``/``XFAIL`` are mapped
  onto ompsim's features where the lit name means something here;
* GCC DejaGnu (``{ dg-... }`` directives, as in libgomp/testsuite);
* plain programs: exit 0 is a pass.

Folders named ``Inputs`` or ``inputs`` hold helpers (second translation units, library
sources) and are never run; nor is a shared header folder at the root (OpenMP_VV's
``ompvv/``), which plain programs get with -I. An expectations file, ``ompsim-expectations.txt`` at the
suite's root, adds XFAIL/UNSUPPORTED lines for programs the user cannot edit.
"""
import fnmatch
import functools
import os
import re
import shlex

from .features import Expr, ExprError
from .header import LANGUAGES, Expectation, HeaderError, ProgramSpec, parse_text

EXPECTATIONS_FILE = "ompsim-expectations.txt"
HELPER_DIRS = ("Inputs", "inputs")
STYLES = ("ompsim", "lit", "dejagnu", "plain")


class SuiteError(ValueError):
    """A suite that cannot be run as given (missing folder, bad expectations file)."""


def discover(root):
    """Every program file under `root` (recursively, helper folders and hidden ones skipped),
    sorted by path relative to `root`."""
    if not os.path.isdir(root):
        raise SuiteError("suite %s: not a folder" % root)
    found = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in HELPER_DIRS and not x.startswith(".") and x != "Output"
                         and not (d == root and x in SUITE_INCLUDE_DIRS))
        for n in files:
            if os.path.splitext(n)[1] in LANGUAGES:
                found.append(os.path.join(d, n))
    return sorted(found, key=lambda p: os.path.relpath(p, root))


def program_name(root, path):
    """A suite program's name in the matrix: the suite folder's name, then the relative path."""
    return "%s/%s" % (os.path.basename(os.path.normpath(root)), os.path.relpath(path, root))


_OMPSIM = re.compile(r"^\s*(?://|!(?!\$))\s*CHECKS:", re.M)
_LIT_KEY = re.compile(r"(?:^|[^A-Za-z0-9_-])(RUN|REQUIRES|UNSUPPORTED|XFAIL):(.*)$")
_DG = re.compile(r"\{\s*dg-[a-z]")


def detect_style(text):
    """ompsim, lit, dejagnu or plain, from a program's text."""
    if _OMPSIM.search(text):
        return "ompsim"
    if any(_LIT_KEY.search(line) and _LIT_KEY.search(line).group(1) == "RUN" for line in text.splitlines()):
        return "lit"
    if _DG.search(text):
        return "dejagnu"
    return "plain"


# --- lit --------------------------------------------------------------------------------

#: lit feature or triple -> the ompsim feature expression it means here.
#: LLVM's lit.cfg gives `gpu` to every device with its own address space; the
#: simulated device is one (its code and memory live in another process), so
#: `separate-address-space` is what it means here. Vendor and hardware names
#: (`nvidiagpu`, `amdgpu`, `mi200`, `hsa`, `apu`, `pgo`, `libc`) say which GPU,
#: or which GPU-only library, so they hold on those GPUs' columns only.
LIT_FEATURES = {
    "x86_64-pc-linux-gnu": "host-offload",
    "x86_64-unknown-linux-gnu": "host-offload",
    "nvptx64-nvidia-cuda": "nvptx",
    "amdgcn-amd-amdhsa": "amdgcn",
    "gpu": "separate-address-space",
    "nvidiagpu": "nvptx",
    "amdgpu": "amdgcn",
    "unified_shared_memory": "usm",
    "ompt": "ompt",
    "flang": "true",
    "*": "true",
}
_LIT_TOKEN = re.compile(r"\s*(\|\||&&|!|\(|\)|[^\s()!&|]+)")


def lit_expression(text):
    """(Expr, names lit knows that mean nothing here) for a lit boolean expression.

    A lit name without a meaning here (libc, ompt, an -LTO triple, a regex) is false,
    as it is in a lit configuration that does not provide it.
    """
    out, unmapped, pos = [], [], 0
    text = text.strip()
    while pos < len(text):
        m = _LIT_TOKEN.match(text, pos)
        if not m:
            raise HeaderError("cannot read lit expression %r" % text)
        tok = m.group(1)
        pos = m.end()
        if tok in ("||", "&&", "!", "(", ")"):
            out.append(tok)
        elif tok in LIT_FEATURES:
            out.append("(%s)" % LIT_FEATURES[tok])
        else:
            unmapped.append(tok)
            out.append("false")
    try:
        expr = Expr(" ".join(out) or "false")
    except ExprError as e:
        raise HeaderError("lit expression %r: %s" % (text, e)) from None
    expr.text = text + (" (no meaning here: %s)" % ", ".join(unmapped) if unmapped else "")
    return expr, unmapped


def _lit_list(value):
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_lit(text, path):
    """A lit test: RUN lines (continuations joined) and its REQUIRES/UNSUPPORTED/XFAIL."""
    runs, pending, requires, unsupported, xfail = [], None, [], [], []
    for line in text.splitlines():
        m = _LIT_KEY.search(line)
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key == "RUN":
            if value.endswith("\\"):
                pending = (pending or "") + value[:-1] + " "
                continue
            runs.append(((pending or "") + value).strip())
            pending = None
        elif key == "REQUIRES":
            requires.extend(lit_expression(v)[0] for v in _lit_list(value))
        elif key == "UNSUPPORTED":
            for v in _lit_list(value):
                e = lit_expression(v)[0]
                unsupported.append(Expectation(e, "lit UNSUPPORTED: %s" % v))
        elif key == "XFAIL":
            for v in _lit_list(value):
                e = lit_expression(v)[0]
                xfail.append(Expectation(e, "lit XFAIL: %s" % v))
    if pending is not None:
        raise HeaderError("RUN line ends with a continuation '\\' and nothing follows")
    runs = [r for r in runs if r]
    if not runs:
        raise HeaderError("lit test without a RUN command")
    spec = _base_spec(path, "lit", "lit: " + runs[0])
    spec.requires, spec.unsupported, spec.xfail = requires, unsupported, xfail
    spec.lit_runs = runs
    spec.xfail_covers_compile = True
    return spec


# --- DejaGnu ----------------------------------------------------------------------------

#: GCC options meaningful only to GCC's offload compilers (or to its dump scans): dropped.
DROPPED_OPTION_PREFIXES = ("-foffload", "-fdump-", "-fopt-info", "-fno-openacc", "-fopenacc-dim")

#: DejaGnu effective-target keywords -> ompsim feature expressions.
EFFECTIVE_TARGETS = {
    "offload_device": "true",
    "offload_device_nonshared_as": "separate-address-space",
    "offload_device_shared_as": "shared-address-space",
    "offload_target_nvptx": "nvptx",
    "offload_target_amdgcn": "amdgcn",
    "offload_target_any": "true",
    "offload_device_nvptx": "nvptx",
    "offload_device_gcn": "amdgcn",
    "fopenmp": "true",
    "lto": "false",
    "openacc_host_selected": "false",
    "openacc_nvidia_accel_selected": "false",
    "openacc_radeon_accel_selected": "false",
}
HOST_TRIPLE = "x86_64-pc-linux-gnu"


def tcl_words(text):
    """Splits a Tcl list: braces group without substitution, quotes group with backslash
    substitution (\\n, \\t, \\\\, \\[ ...), other words are bare."""
    words, i, n = [], 0, len(text)
    escapes = {"n": "\n", "t": "\t", "r": "\r"}
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        if text[i] == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                if text[j] == "\\":
                    j += 2
                    continue
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            if depth:
                raise HeaderError("unbalanced braces in %r" % text)
            words.append(text[i + 1:j - 1])
            i = j
        elif text[i] == '"':
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    buf.append(escapes.get(text[j + 1], text[j + 1]))
                    j += 2
                    continue
                buf.append(text[j])
                j += 1
            if j >= n:
                raise HeaderError("unterminated quote in %r" % text)
            words.append("".join(buf))
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace():
                j += 1
            words.append(text[i:j])
            i = j
    return words


def dg_directives(text):
    """[(line, [name, args...])] for every `{ dg-... }` directive."""
    found = []
    for m in _DG.finditer(text):
        start = m.start()
        depth, j, n = 0, start, len(text)
        while j < n:
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == '"':
                k = j + 1
                while k < n and text[k] != '"':
                    k += 2 if text[k] == "\\" else 1
                j = k + 1
                continue
            depth += {"{": 1, "}": -1}.get(c, 0)
            j += 1
            if depth == 0:
                break
        if depth:
            raise HeaderError("line %d: unterminated dg directive" % (text.count("\n", 0, start) + 1))
        found.append((text.count("\n", 0, start) + 1, tcl_words(text[start + 1:j - 1])))
    return found


def _selector_expr(words, unmapped):
    """An ompsim expression text for a DejaGnu target selector's words (any holding)."""
    parts = []
    for w in words:
        w = w.strip()
        if not w:
            continue
        if " " in w or w.startswith("!"):
            # A braced expression: { ! x }, { x && y }.
            toks = []
            for t in w.replace("(", " ( ").replace(")", " ) ").split():
                toks.append(t if t in ("!", "&&", "||", "(", ")") else "(%s)" % _selector_expr([t], unmapped))
            parts.append("(%s)" % " ".join(toks))
        elif w in EFFECTIVE_TARGETS:
            parts.append("(%s)" % EFFECTIVE_TARGETS[w])
        elif "-" in w and fnmatch.fnmatchcase(HOST_TRIPLE, w.replace("*-*-*", "*")):
            parts.append("true")
        else:
            unmapped.append(w)
            parts.append("false")
    return " || ".join(parts) or "false"


def _selector(args, default="true"):
    """(expression text, unmapped names) for the `{ target ... }` / `{ xfail ... }` argument."""
    unmapped = []
    for a in args:
        words = tcl_words(a)
        if words and words[0] in ("target", "xfail", "skip"):
            return _selector_expr(words[1:], unmapped), unmapped
        if words:
            return _selector_expr(words, unmapped), unmapped
    return default, unmapped


def parse_dejagnu(text, path):
    spec = _base_spec(path, "dejagnu", "")
    spec.xfail_covers_compile = True
    folder = os.path.dirname(os.path.abspath(path))
    options, dropped, notes = [], [], []
    for line, words in dg_directives(text):
        name, args = words[0], words[1:]
        where = "line %d: %s: " % (line, name)

        def expr(text, _reason):
            try:
                return Expr(text)
            except ExprError as e:
                raise HeaderError(where + str(e)) from None
        if name == "dg-do":
            if not args or args[0] not in ("run", "link", "compile", "assemble", "preprocess"):
                raise HeaderError(where + "expected run, link, compile, assemble or preprocess")
            spec.action = {"assemble": "compile", "preprocess": "compile"}.get(args[0], args[0])
            if len(args) > 1:
                sel, unmapped = _selector(args[1:])
                if tcl_words(args[1])[:1] == ["xfail"]:
                    spec.xfail.append(Expectation(expr(sel, ""), "dg-do %s xfail selector" % args[0]))
                else:
                    spec.requires.append(expr(sel, ""))
                    spec.requires[-1].text = "dg-do %s { %s }%s" % (
                        args[0], args[1].strip(), " (no meaning here: %s)" % ", ".join(unmapped) if unmapped else "")
        elif name in ("dg-additional-options", "dg-options"):
            if not args:
                raise HeaderError(where + "needs the options")
            sel, _ = _selector(args[1:]) if len(args) > 1 else ("true", [])
            if sel != "true":
                notes.append("%s %s applies to a target selector and was not used" % (name, args[0]))
                continue
            for o in shlex.split(args[0]):
                (dropped if o.startswith(DROPPED_OPTION_PREFIXES) else options).append(o)
        elif name == "dg-additional-sources":
            for s in (args[0].split() if args else []):
                spec.extra_sources.append(os.path.join(folder, s))
        elif name == "dg-output":
            if not args:
                raise HeaderError(where + "needs a pattern")
            if len(args) > 1:
                sel, _ = _selector(args[1:])
                if sel != "true":
                    spec.output_patterns.append((args[0], expr(sel, "")))
                    continue
            spec.output_patterns.append((args[0], None))
        elif name == "dg-shouldfail":
            spec.should_fail = True
        elif name == "dg-set-target-env-var":
            if len(args) < 2:
                raise HeaderError(where + "needs a name and a value")
            spec.env[args[0]] = args[1]
        elif name == "dg-require-effective-target":
            if not args:
                raise HeaderError(where + "needs an effective-target keyword")
            unmapped = []
            e = expr(_selector_expr([args[0]], unmapped), "")
            e.text = "dg-require-effective-target %s%s" % (args[0], " (no meaning here)" if unmapped else "")
            spec.requires.append(e)
        elif name == "dg-skip-if":
            sel, unmapped = _selector(args[1:2]) if len(args) > 1 else ("true", [])
            spec.unsupported.append(Expectation(expr(sel, ""), "dg-skip-if: %s" % (args[0] if args else "")))
        elif name in ("dg-xfail-if", "dg-xfail-run-if"):
            sel, unmapped = _selector(args[1:2]) if len(args) > 1 else ("true", [])
            spec.xfail.append(Expectation(expr(sel, ""), "%s: %s" % (name, args[0] if args else "")))
        elif name == "dg-error":
            spec.unsupported.append(Expectation(Expr("true"), "dg-error expects GCC's own diagnostics"))
        elif name in ("dg-warning", "dg-message", "dg-bogus", "dg-note", "dg-excess-errors",
                      "dg-prune-output", "dg-final", "dg-timeout-factor", "dg-timeout"):
            notes.append("%s not checked (GCC-specific)" % name)
        else:
            spec.unsupported.append(Expectation(Expr("true"), "DejaGnu directive %s is not understood here" % name))
    spec.build_args = options
    spec.checks = "DejaGnu dg-do %s%s%s" % (
        spec.action, "; dropped offload-only options: " + " ".join(dropped) if dropped else "",
        "; " + "; ".join(notes) if notes else "")
    return spec


# --- common -----------------------------------------------------------------------------

def _base_spec(path, style, checks):
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    if ext not in LANGUAGES:
        raise HeaderError("unknown program language for extension %r" % ext)
    return ProgramSpec(path=path, name=os.path.splitext(name)[0], language=LANGUAGES[ext], checks=checks,
                       requires=[], unsupported=[], xfail=[], xfail_compile=[], expect_fail_if=[],
                       build_args=[], shlibs=[], env={}, args=[], timeout=0, check_prefixes=set(),
                       style=style, source_dir=os.path.dirname(os.path.abspath(path)))


def parse_program(path, suite=None, expectations_file=None):
    """The ProgramSpec of `path` in whatever style it is written; with `suite` (its root
    folder), named after the suite and carrying the suite's expectations (from
    `expectations_file` when given, else the suite's own). Raises HeaderError."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as e:
        raise HeaderError("cannot read %s: %s" % (path, e)) from None
    style = detect_style(text)
    if style == "ompsim":
        spec = parse_text(text, path)
        spec.source_dir = os.path.dirname(os.path.abspath(path))
    elif style == "lit":
        spec = parse_lit(text, path)
    elif style == "dejagnu":
        spec = parse_dejagnu(text, path)
    else:
        spec = _base_spec(path, "plain", "plain program: exit 0 is a pass")
        spec.xfail_covers_compile = True
        if suite:
            spec.build_args += suite_include_flags(suite) + suite_version_flags(suite, path, spec.language)
    if suite:
        spec.name = program_name(suite, path)
        rel = os.path.relpath(path, suite)
        for kind, exp in expectations(suite, expectations_file).get(rel, []):
            if kind == "PASS":
                spec.xfail = [Expectation(_Lifted(x.expr, exp.expr), x.reason) for x in spec.xfail]
            else:
                (spec.xfail if kind == "XFAIL" else spec.unsupported).append(exp)
    return spec


class _Lifted:
    """An expected failure that a PASS line of the expectations file lifts where its
    expression holds (a lit XFAIL for a GPU that ompsim's virtual GPU does not share)."""

    def __init__(self, expr, lifted):
        self.expr, self.lifted = expr, lifted
        self.text = "%s, except where %s" % (expr.text, lifted.text)

    def __call__(self, features):
        return self.expr(features) and not self.lifted(features)


#: Folders at a suite's root that hold the header every plain program of the suite
#: includes, as the suite's own build passes them with -I (OpenMP_VV's `ompvv/`).
SUITE_INCLUDE_DIRS = ("ompvv",)


def suite_include_flags(suite):
    """-I flags for a plain suite's shared header folders (those of SUITE_INCLUDE_DIRS it has)."""
    return ["-I" + os.path.join(os.path.abspath(suite), d) for d in SUITE_INCLUDE_DIRS
            if os.path.isdir(os.path.join(suite, d))]


def suite_version_flags(suite, path, language):
    """-fopenmp-version for a Fortran program in a folder named after an OpenMP version.

    OpenMP_VV keeps its tests in tests/<4.5|5.0|5.1|5.2|6.0>/ and builds each with that
    version; flang-22 defaults to OpenMP 3.1 and rejects later constructs, while clang-22's
    default (5.1) builds the C and C++ tests, so only Fortran gets the flag. The flag
    follows the harness's default one, and the last one given wins."""
    if language != "fortran":
        return []
    for part in os.path.relpath(path, suite).split(os.sep)[:-1]:
        if re.fullmatch(r"[456]\.[0-9]", part):
            return ["-fopenmp-version=" + part.replace(".", "")]
    return []


# --- expectations -----------------------------------------------------------------------

def unsupported_by_expectations(path, suite, features, expectations_file=None):
    """The reason of the first expectations-file UNSUPPORTED line that holds for `path`, or None.

    For a program whose own header cannot be read (a RUN line left unterminated upstream):
    its expectations line still says where it is not run."""
    rel = os.path.relpath(path, suite)
    for kind, exp in expectations(suite, expectations_file).get(rel, []):
        if kind == "UNSUPPORTED" and exp.expr(features):
            return exp.reason
    return None


def expectations(suite, path=None):
    """{relative program path: [(XFAIL|UNSUPPORTED|PASS, Expectation)]} from the suite's
    expectations file (empty without one), or from `path` (an expectations file kept
    elsewhere, e.g. beside a read-only suite; it must exist). Raises SuiteError naming
    the file and line."""
    if path is None:
        path = os.path.join(suite, EXPECTATIONS_FILE)
        try:
            st = os.stat(path)
        except OSError:
            return {}
    else:
        try:
            st = os.stat(path)
        except OSError as e:
            raise SuiteError("expectations file %s: %s" % (path, e.strerror)) from None
    return _expectations(suite, path, st.st_mtime_ns)


#: What an expectations line says of its programs where its expression holds: they fail,
#: they do not apply, or they pass although their own header expects a failure.
KINDS = ("XFAIL", "UNSUPPORTED", "PASS")

#: Leading word of an expectations line whose pattern may match nothing.
OPTIONAL_MARKER = "optional"


def parse_expectations(text, path):
    """[(line, program pattern, XFAIL|UNSUPPORTED|PASS, Expectation, optional)] of an expectations
    file's text; `optional` lines (a leading ``optional`` word) may match no program.
    Raises SuiteError naming the file and line."""
    entries = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = "%s:%d: " % (path, lineno)
        parts = line.split(None, 3)
        # `optional <pattern> XFAIL ...`; a program named "optional" stays a pattern
        # (its second word is then XFAIL or UNSUPPORTED).
        optional = len(parts) >= 3 and parts[0] == OPTIONAL_MARKER and parts[1] not in KINDS
        if optional:
            line = line[len(OPTIONAL_MARKER):].strip()
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[1] not in KINDS:
            raise SuiteError(where + "expected '[optional] <program> XFAIL|UNSUPPORTED|PASS <feature expression> "
                                     "-- <reason>'")
        pattern, kind, rest = parts
        expr_text, sep, reason = rest.partition(" -- ")
        if not sep or not reason.strip():
            raise SuiteError(where + "%s needs '<feature expression> -- <reason>'" % kind)
        try:
            expr = Expr(expr_text)
        except ExprError as e:
            raise SuiteError(where + str(e)) from None
        entries.append((lineno, pattern, kind,
                        Expectation(expr, "%s (%s)" % (reason.strip(), os.path.basename(path))), optional))
    return entries


@functools.lru_cache(maxsize=None)
def _expectations(suite, path, _mtime):
    programs = [os.path.relpath(p, suite) for p in discover(suite)]
    table = {}
    with open(path, encoding="utf-8") as f:
        entries = parse_expectations(f.read(), path)
    for lineno, pattern, kind, exp, optional in entries:
        matched = [p for p in programs if fnmatch.fnmatchcase(p, pattern)]
        if not matched and not optional:
            # Stale lines must show up in one's own suite; a folder that a partial
            # checkout may lack gets the marker instead.
            raise SuiteError("%s:%d: %r matches no program of the suite (remove the line, or start it with "
                             "'%s' if its programs may be absent, as in a partial checkout)"
                             % (path, lineno, pattern, OPTIONAL_MARKER))
        for p in matched:
            table.setdefault(p, []).append((kind, exp))
    return table
