"""Outcome classification: from a program's header, the features of its column and what
happened at compile and run time, to one of a closed set of result codes.

This module runs nothing; the caller supplies compile/run results and a FileCheck callback.
"""
import dataclasses

PASS = "PASS"
FAIL = "FAIL"
XFAIL = "XFAIL"
XPASS = "XPASS"
UNSUPPORTED = "UNSUPPORTED"
UNAVAILABLE = "UNAVAILABLE"
COMPILE_ERROR = "COMPILE-ERROR"
UNRESOLVED = "UNRESOLVED"
TIMEOUT = "TIMEOUT"
ALL = (PASS, FAIL, XFAIL, XPASS, UNSUPPORTED, UNAVAILABLE, COMPILE_ERROR, UNRESOLVED, TIMEOUT)


@dataclasses.dataclass
class Outcome:
    """One cell's result. `expected` is False for anything that must fail the run."""
    code: str
    reason: str
    expected: bool
    compiler_message: str = ""

    @property
    def skipped(self):
        return self.code in (UNSUPPORTED, UNAVAILABLE)


@dataclasses.dataclass
class RunResult:
    """What running a program produced."""
    exit_code: int          # negative: killed by that signal
    stdout: str
    stderr: str
    timed_out: bool = False


def first_error_line(text):
    """The compiler's first error line (or the first non-empty line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    # Summary lines say that something failed; prefer the line that says what.
    generic = ("Semantic errors in", "linker command failed", "errors generated", "error generated",
               "clang-linker-wrapper: error", "failed with exit code")
    specific = [ln for ln in errors if not any(g in ln for g in generic)]
    undefined = [ln for ln in lines if "undefined reference" in ln or "undefined symbol" in ln]
    if specific:
        return specific[0]
    if undefined:
        return undefined[0]
    if errors:
        # flang prints the semantic error's text on the line after its location.
        for i, ln in enumerate(lines):
            if ln.startswith("./") or ln.startswith("/"):
                if ": error:" in ln:
                    return ln
        return errors[0]
    return lines[0] if lines else "(no output)"


def describe_exit(run):
    """A short account of a failed run: exit status and the last line the program printed."""
    status = "killed by signal %d" % -run.exit_code if run.exit_code < 0 else "exit %d" % run.exit_code
    tail = [ln.strip() for ln in (run.stderr + "\n" + run.stdout).splitlines() if ln.strip()]
    # Prefer the program's own FAIL line or ompsim's diagnostic over the last line; the
    # start-up notice naming stock variables ompsim ignores (docs/environment.md) is no
    # diagnostic of the failure.
    for ln in tail:
        if ln.startswith(("FAIL", "ompsim:")) and not ln.endswith("ompsim does not honour (see docs/environment.md)"):
            return "%s: %s" % (status, ln)
    return "%s: %s" % (status, tail[-1]) if tail else status


def classify_build(spec, features, compiled, compiler_output):
    """Outcome of the build step, or None when the program should go on to run."""
    expected = spec.first_holding(spec.xfail_compile, features)
    if not compiled:
        msg = first_error_line(compiler_output)
        if not expected and spec.xfail_covers_compile:
            # lit, DejaGnu and plain programs: an XFAIL expects the test as a whole to fail.
            expected = spec.first_holding(spec.xfail, features)
        if expected:
            return Outcome(COMPILE_ERROR, "%s (expected: %s)" % (msg, expected.reason), True, msg)
        return Outcome(COMPILE_ERROR, msg, False, msg)
    if expected:
        return Outcome(XPASS, "compiled, but XFAIL-COMPILE says: %s" % expected.reason, False)
    return None


def classify_run(spec, features, run, checker):
    """Outcome of a finished run.

    `checker(prefix, text)` runs FileCheck for `prefix` over `text` and returns
    None when it matches, else a one-line message.
    """
    if run.timed_out:
        return Outcome(TIMEOUT, "no exit within the time limit (a hang is never an expected outcome)", False)
    expect_fail = spec.first_holding(spec.expect_fail_if, features)
    xfail = spec.first_holding(spec.xfail, features)
    if expect_fail:
        mode_prefixes = [("CHECK-FAIL", run.stdout), ("CHECK-FAIL-STDERR", run.stderr)]
    else:
        mode_prefixes = [("CHECK", run.stdout), ("CHECK-STDERR", run.stderr)]
    problems = []
    if expect_fail and run.exit_code == 0:
        problems.append("exited 0, but a diagnosed failure is expected (%s)" % expect_fail.reason)
    elif not expect_fail and run.exit_code != 0:
        problems.append(describe_exit(run))
    if not problems:
        for prefix, text in mode_prefixes:
            if prefix in spec.check_prefixes:
                err = checker(prefix, text)
                if err:
                    problems.append("%s mismatch: %s" % (prefix, err))
                    break
    return finish(problems, xfail, expect_fail)


def finish(problems, xfail, expect_fail=None):
    """The outcome once the problems of a finished cell are known, under its XFAIL (if any)."""
    correct = not problems
    if xfail:
        if correct:
            return Outcome(XPASS, "passed, but XFAIL says: %s" % xfail.reason, False)
        return Outcome(XFAIL, "%s [%s]" % (xfail.reason, problems[0]), True)
    if correct:
        if expect_fail:
            return Outcome(PASS, "diagnosed failure, as expected: %s" % expect_fail.reason, True)
        return Outcome(PASS, "", True)
    return Outcome(FAIL, problems[0], False)


def classify_preconditions(spec, features):
    """UNSUPPORTED when REQUIRES does not hold or UNSUPPORTED does; else None."""
    for req in spec.requires:
        if not req(features):
            return Outcome(UNSUPPORTED, "REQUIRES %s does not hold" % req.text, True)
    why = spec.first_holding(spec.unsupported, features)
    if why:
        return Outcome(UNSUPPORTED, why.reason, True)
    return None


def classify_dejagnu_run(spec, features, run):
    """Outcome of a DejaGnu program's run: exit status under dg-shouldfail, then the
    dg-output patterns (concatenated into one regex, searched in stdout+stderr)."""
    import re
    if run.timed_out:
        return Outcome(TIMEOUT, "no exit within the time limit (a hang is never an expected outcome)", False)
    problems = []
    if spec.should_fail and run.exit_code == 0:
        problems.append("exited 0, but dg-shouldfail expects a failure")
    elif not spec.should_fail and run.exit_code != 0:
        problems.append(describe_exit(run))
    patterns = [p for p, cond in spec.output_patterns if cond is None or cond(features)]
    if not problems and patterns:
        regex = "".join(patterns)
        try:
            found = re.search(regex, run.stdout + run.stderr, re.S)
        except re.error as e:
            return Outcome(UNRESOLVED, "dg-output pattern %r is not a valid regex here: %s" % (regex, e), False)
        if not found:
            problems.append("dg-output %r not found in the output" % (regex if len(regex) < 120 else regex[:117] + "..."))
    return finish(problems, spec.first_holding(spec.xfail, features))


def step_problem(step, run):
    """One line for a failed lit RUN step: the command, its status and its first error."""
    if run.timed_out:
        return "RUN `%s`: no exit within the time limit" % step
    lines = [ln.strip() for ln in (run.stdout + "\n" + run.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error:" in ln]
    detail = errors[0] if errors else (lines[-1] if lines else "no output")
    return "RUN `%s`: exit %d: %s" % (step if len(step) < 100 else step[:97] + "...", run.exit_code, detail)


def classify_compile_only(spec, features, problems):
    """Outcome of a compile-only GPU column whose builds succeeded: the device-code checks'
    problems, under an XFAIL that names a compile-only column (run-time XFAILs do not apply)."""
    xfail = next((e for e in spec.xfail if e.expr(features)
                  and any(n == "gpu-build" or n.startswith("gpu-build:") for n in e.expr.names)), None)
    return finish(problems, xfail)


#: The per-run codes of a run that did what its checks ask (XPASS: it did, under an XFAIL).
RUN_PASSED = (PASS, XPASS)
#: How many failing run numbers a flaky cell's reason lists (the record has them all).
LISTED_RUNS = 20


def _runs(numbers):
    shown = ", ".join(str(n) for n in numbers[:LISTED_RUNS])
    more = " and %d more" % (len(numbers) - LISTED_RUNS) if len(numbers) > LISTED_RUNS else ""
    return "%s %s%s" % ("run" if len(numbers) == 1 else "runs", shown, more)


def failed_runs(outcomes):
    """The 1-based numbers of the runs in `outcomes` whose program did not pass."""
    return [i for i, o in enumerate(outcomes, 1) if o.code not in RUN_PASSED]


def combine_runs(outcomes, repeat):
    """One outcome for a cell whose program ran len(outcomes) times of the `repeat` asked
    for (fewer: a run timed out and the repeats stopped there).

    Every run passed: the first run's outcome (PASS, or XPASS under an XFAIL). Every run
    failed: the outcome of the first run that failed unexpectedly (TIMEOUT under an
    XFAIL), else the first run's (XFAIL under an XFAIL), as one run would report it. Some
    passed and some failed: flaky, which is never expected, XFAIL or not: FAIL (TIMEOUT or
    UNRESOLVED when the first failure was that) naming the failed runs and the first failure.
    """
    done = len(outcomes)
    failed = failed_runs(outcomes)
    if not failed:
        return outcomes[0]
    stopped = "; stopped repeating after run %d of %d: it timed out" % (done, repeat) if done < repeat else ""
    if len(failed) == done:
        first = next((o for o in outcomes if not o.expected), outcomes[0])
        every = "failed all %d runs" % done if done > 1 else "failed its only run"
        return Outcome(first.code, "%s (%s%s)" % (first.reason, every, stopped), first.expected,
                       first.compiler_message)
    first = outcomes[failed[0] - 1]
    code = first.code if not first.expected and first.code in (TIMEOUT, UNRESOLVED) else FAIL
    under_xfail = any(o.code in (XFAIL, XPASS) for o in outcomes)
    return Outcome(code, "flaky: failed %d of %d runs (%s)%s%s; first failure: %s" % (
        len(failed), done, _runs(failed),
        ", passed the other %d though XFAIL expects every run to fail" % (done - len(failed)) if under_xfail else "",
        stopped, first.reason), False,
        first.compiler_message)
