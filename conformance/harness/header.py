"""The header language of conformance programs (see conformance/README.md).

Directives are comment lines (``//`` in C/C++, ``!`` in Fortran) of the form
``KEY: value``. Anything that looks like a directive (an upper-case key and a
colon right after the comment marker) must be a known one: a misspelt
``REQUIRE:`` would otherwise silently drop a requirement. Every problem is a
HeaderError, which the harness reports as UNRESOLVED.
"""
import dataclasses
import os
import re

from .features import Expr, ExprError

#: Program file extension -> language. `.C` is C++ as in GCC (its g++ and libgomp.c++ suites).
LANGUAGES = {".c": "c", ".cpp": "c++", ".cc": "c++", ".cxx": "c++", ".C": "c++", ".f90": "fortran", ".F90": "fortran"}

#: FileCheck prefixes and which stream / mode each checks.
CHECK_PREFIXES = {
    "CHECK": ("stdout", "normal"),
    "CHECK-STDERR": ("stderr", "normal"),
    "CHECK-FAIL": ("stdout", "expect-fail"),
    "CHECK-FAIL-STDERR": ("stderr", "expect-fail"),
}
_CHECK_KEY = re.compile(r"^(CHECK-FAIL-STDERR|CHECK-FAIL|CHECK-STDERR|CHECK)"
                        r"(?:-(?:NEXT|SAME|NOT|DAG|LABEL|EMPTY|COUNT-[0-9]+))?$")
SIMPLE_KEYS = ("CHECKS", "REQUIRES", "UNSUPPORTED", "XFAIL", "XFAIL-COMPILE", "EXPECT-FAIL-IF",
               "BUILD", "BUILD-SHLIB", "ENV", "ARGS", "TIMEOUT")
_DIRECTIVE = re.compile(r"^\s*(?://|!(?!\$))\s*([A-Z][A-Z0-9-]*[A-Z0-9]):(.*)$")
_ENV = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_SHLIB = re.compile(r"^(lib[A-Za-z0-9_.+-]+\.so):\s*(\S.*)$")


class HeaderError(ValueError):
    """A malformed header: the program's outcome is UNRESOLVED."""


@dataclasses.dataclass(frozen=True)
class Expectation:
    """A condition with the reason a reader sees when it holds."""
    expr: Expr
    reason: str


@dataclasses.dataclass
class ProgramSpec:
    """Everything a program's header says."""
    path: str
    name: str
    language: str
    checks: str
    requires: list          # [Expr]; all must hold
    unsupported: list       # [Expectation]; any holding means UNSUPPORTED
    xfail: list             # [Expectation]; any holding means the run is expected to fail
    xfail_compile: list     # [Expectation]; any holding means compilation is expected to fail
    expect_fail_if: list    # [Expectation]; any holding means a diagnosed failure is the correct outcome
    build_args: list        # extra compiler arguments (substitutions not yet applied)
    shlibs: list            # [(name, [args])] shared libraries built before the program
    env: dict               # NAME -> value (substitutions not yet applied)
    args: list              # program arguments
    timeout: int            # seconds, or 0 for the harness default
    check_prefixes: set     # FileCheck prefixes with at least one directive
    # Suite programs in other styles (harness/suites.py) fill in the fields below.
    style: str = "ompsim"   # ompsim, lit, dejagnu or plain
    action: str = "run"     # run, link (build, never run) or compile (-c only)
    lit_runs: list = dataclasses.field(default_factory=list)       # lit RUN commands, continuation-joined
    output_patterns: list = dataclasses.field(default_factory=list)  # DejaGnu dg-output regexes, in order
    should_fail: bool = False        # DejaGnu dg-shouldfail: the run must exit non-zero
    xfail_covers_compile: bool = False  # an XFAIL also expects a failed build (lit, DejaGnu, plain)
    extra_sources: list = dataclasses.field(default_factory=list)  # further sources, absolute (hashed, device-checked)
    source_dir: str = ""             # where %S, relative sources and inputs resolve (default: the file's folder)

    def first_holding(self, expectations, features):
        """The first expectation whose condition holds for `features`, or None."""
        for e in expectations:
            if e.expr(features):
                return e
        return None


def _expectation(key, value):
    expr, sep, reason = value.partition(" -- ")
    if not sep or not reason.strip():
        raise HeaderError("%s needs '<feature expression> -- <reason>', got %r" % (key, value.strip()))
    return Expectation(_expr(key, expr), reason.strip())


def _expr(key, text):
    try:
        return Expr(text)
    except ExprError as e:
        raise HeaderError("%s: %s" % (key, e)) from None


def _split_args(key, value):
    import shlex
    try:
        return shlex.split(value)
    except ValueError as e:
        raise HeaderError("%s: %s" % (key, e)) from None


def parse_text(text, path):
    """Parses the header of program `path` whose contents are `text`. Raises HeaderError."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    if ext not in LANGUAGES:
        raise HeaderError("unknown program language for extension %r" % ext)
    checks, requires, unsupported, xfail, xfail_compile, expect_fail = [], [], [], [], [], []
    build_args, shlibs, env, args, timeout, prefixes = [], [], {}, [], [], set()
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        where = "line %d: " % lineno
        try:
            cm = _CHECK_KEY.match(key)
            if cm:
                prefixes.add(cm.group(1))
                continue
            if key not in SIMPLE_KEYS:
                raise HeaderError("unknown directive %s: (known: %s, and FileCheck lines with prefixes %s)"
                                  % (key, ", ".join(SIMPLE_KEYS), ", ".join(CHECK_PREFIXES)))
            if not value:
                raise HeaderError("%s: has no value" % key)
            if key == "CHECKS":
                checks.append(value)
            elif key == "REQUIRES":
                requires.extend(_expr(key, part) for part in value.split(","))
            elif key == "UNSUPPORTED":
                unsupported.append(_expectation(key, value))
            elif key == "XFAIL":
                xfail.append(_expectation(key, value))
            elif key == "XFAIL-COMPILE":
                xfail_compile.append(_expectation(key, value))
            elif key == "EXPECT-FAIL-IF":
                expect_fail.append(_expectation(key, value))
            elif key == "BUILD":
                build_args.extend(_split_args(key, value))
            elif key == "BUILD-SHLIB":
                sm = _SHLIB.match(value)
                if not sm:
                    raise HeaderError("BUILD-SHLIB needs 'lib<name>.so: <sources and flags>', got %r" % value)
                shlibs.append((sm.group(1), _split_args(key, sm.group(2))))
            elif key == "ENV":
                em = _ENV.match(value)
                if not em:
                    raise HeaderError("ENV needs NAME=VALUE, got %r" % value)
                env[em.group(1)] = em.group(2)
            elif key == "ARGS":
                args.extend(_split_args(key, value))
            elif key == "TIMEOUT":
                if not value.isdigit() or int(value) <= 0:
                    raise HeaderError("TIMEOUT needs a positive number of seconds, got %r" % value)
                timeout.append(int(value))
        except HeaderError as e:
            raise HeaderError(where + str(e)) from None
    if len(checks) != 1:
        raise HeaderError("needs exactly one 'CHECKS: <what it checks>' line, found %d" % len(checks))
    if len(timeout) > 1:
        raise HeaderError("more than one TIMEOUT line")
    fail_prefixes = prefixes & {"CHECK-FAIL", "CHECK-FAIL-STDERR"}
    if expect_fail and not fail_prefixes:
        raise HeaderError("EXPECT-FAIL-IF needs CHECK-FAIL-STDERR (or CHECK-FAIL) lines naming the diagnostic")
    if fail_prefixes and not expect_fail:
        raise HeaderError("%s lines without an EXPECT-FAIL-IF line" % "/".join(sorted(fail_prefixes)))
    return ProgramSpec(path=path, name=os.path.splitext(name)[0], language=LANGUAGES[ext], checks=checks[0],
                       requires=requires, unsupported=unsupported, xfail=xfail, xfail_compile=xfail_compile,
                       expect_fail_if=expect_fail, build_args=build_args, shlibs=shlibs, env=env, args=args,
                       timeout=timeout[0] if timeout else 0, check_prefixes=prefixes)


def parse_file(path):
    """Parses program `path`. Raises HeaderError (also for an unreadable file)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise HeaderError("cannot read %s: %s" % (path, e)) from None
    return parse_text(text, path)


def discover(directory):
    """The program files in `directory` (not its inputs/ folder), sorted by name."""
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if os.path.splitext(n)[1] in LANGUAGES and os.path.isfile(os.path.join(directory, n)))
