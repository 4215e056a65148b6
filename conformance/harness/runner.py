"""Runs one matrix cell (program x backend x translation) end to end and classifies it."""
import dataclasses
import os
import re
import shlex
import subprocess
import time

from ompsim_base import backends, gpu, paths

from . import build as builder
from . import outcome as oc
from . import devir, hostruntime, process, suites
from .features import GPU_BUILD_BACKENDS, SIM_GPU_BACKENDS, backend_features
from .header import HeaderError, parse_file

DEFAULT_TIMEOUT = 60
FILECHECK = paths.tool("FileCheck")


@dataclasses.dataclass
class Cell:
    """One matrix cell; `id` is the pytest id. `suite` is the root of the user suite the
    program comes from (None for ompsim's own programs)."""
    program: str   # path
    backend: str
    translate: str
    suite: str = None
    expectations: str = None   # --expectations FILE: used instead of the suite's own
    map_check: bool = False    # --map-check: run CHECKED_BACKENDS under OMPSIM_CHECK=1
    repeat: int = 1            # --repeat N: build once, run the program N times
    #: sim-nvptx and sim-amdgcn both run in this session with this cell's translation: a C or
    #: C++ program is built once for both (build.SIM_GPUS)
    both_sim_gpus: bool = False

    @property
    def name(self):
        if self.suite:
            return suites.program_name(self.suite, self.program)
        return os.path.splitext(os.path.basename(self.program))[0]

    @property
    def id(self):
        return "%s-%s-%s" % (self.backend, self.translate, self.name)


def filecheck(source, prefix, text):
    """Runs FileCheck-22 with `prefix` from `source` over `text`; None when it matches."""
    r = subprocess.run([FILECHECK, source, "--check-prefix=" + prefix, "--dump-input=never"],
                       input=text, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if r.returncode == 0:
        return None
    lines = [ln.strip() for ln in r.stdout.splitlines() if "error:" in ln]
    return lines[0].split("error:", 1)[1].strip() if lines else r.stdout.strip()[:200]


def execute(argv, env, cwd, timeout, merge_stderr=False, crash_expected=False):
    """Runs argv in its own process group; on timeout kills the whole group (executors included).
    With `merge_stderr`, stderr is interleaved into stdout (as DejaGnu and lit pipes see it);
    `crash_expected`: a process of argv is meant to die by a signal whatever its status says."""
    rc, out, err, timed_out = process.communicate(
        argv, timeout, crash_expected=crash_expected, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE, text=True, env=env, cwd=cwd,
        errors="replace")
    return oc.RunResult(rc, out, err or "", timed_out=timed_out)


#: The columns --map-check runs under the map checker (docs/checker.md), the virtual GPU's
#: with the GPU checks (docs/gpu-checks.md).
CHECKED_BACKENDS = ("sim", "sim-nvptx", "sim-amdgcn")
#: How each report of the map checker starts.
CHECK_PREFIX = "ompsim: check: "


def _map_checked(cell):
    """Whether `cell` runs under the map checker (the `map-check` feature)."""
    return bool(cell.map_check) and cell.backend in CHECKED_BACKENDS


#: How much longer a GPU column's program may run under the checker: the GPU checks run a
#: grid's blocks one at a time and check each access (OpenMP_VV's gemv_target_many_matrices:
#: 7 s plain, 51 s checked on 2 cores; docs/performance.md has the checker's cost per kernel).
CHECKED_GPU_TIMEOUT_FACTOR = 3


def _run_timeout(cell, spec):
    """The seconds a run of `cell`'s program may take."""
    timeout = spec.timeout or DEFAULT_TIMEOUT
    if _map_checked(cell) and cell.backend in SIM_GPU_BACKENDS:
        timeout *= CHECKED_GPU_TIMEOUT_FACTOR
    return timeout


def _checked(cell, env):
    """Under --map-check, turns the map checker on in `env` for a checked column; True if it did."""
    if not _map_checked(cell) or "OMPSIM_CHECK" in env:
        return False
    env["OMPSIM_CHECK"] = "1"
    return True


def _check_reports(result, text, xfail):
    """A passing cell that the map checker reported on fails: the report is a false alarm or a
    real mapping bug, and either needs a look. Under an XFAIL (`XFAIL map-check -- <the
    bug>`), the report is the expected failure."""
    if result.code not in (oc.PASS, oc.XPASS):
        return result
    lines = [ln for ln in text.splitlines() if ln.startswith(CHECK_PREFIX)]
    if not lines:
        return result
    more = " (and %d more)" % (len(lines) - 1) if len(lines) > 1 else ""
    return oc.finish(["the map checker reported: %s%s" % (lines[0], more)], xfail)


def run_cell(cell, out_root, workdir):
    """Returns (Outcome, record dict) for `cell`; never raises for anything a program can cause."""
    start = time.monotonic()
    record = {"program": cell.name, "backend": cell.backend, "translate": cell.translate,
              "image": "gpu" if cell.backend in GPU_BUILD_BACKENDS else backends.image_kind(cell.backend),
              "checks": "", "xfail_reasons": [], "style": "", "notes": "",
              "compile_command": "", "compile": None, "exit_code": None, "stdout_tail": "", "stderr_tail": "", "run_s": None}
    if cell.repeat > 1:
        # How many times the program ran (0: it did not run), and which runs failed (from 1).
        record.update(repeat=cell.repeat, runs=0, failed_runs=[])
    result = _run(cell, out_root, workdir, record)
    record.update(outcome=result.code, expected=result.expected, reason=result.reason,
                  compiler_message=result.compiler_message, duration=round(time.monotonic() - start, 3))
    return result, record


def _run(cell, out_root, workdir, record):
    try:
        spec = (suites.parse_program(cell.program, cell.suite, cell.expectations) if cell.suite
                else parse_file(cell.program))
    except (HeaderError, suites.SuiteError) as e:
        if cell.suite and isinstance(e, HeaderError):
            # A suite's test that even lit cannot read is not run where its expectations line says so.
            language = suites.LANGUAGES.get(os.path.splitext(cell.program)[1])
            features = backend_features(cell.backend, cell.translate, language, map_check=_map_checked(cell))
            reason = suites.unsupported_by_expectations(cell.program, cell.suite, features, cell.expectations)
            if reason:
                return oc.Outcome(oc.UNSUPPORTED, "malformed header (%s); %s" % (e, reason), True)
        return oc.Outcome(oc.UNRESOLVED, "malformed header: %s" % e, False)
    record["checks"] = spec.checks
    record["style"] = spec.style
    record["xfail_reasons"] = [e.reason for e in spec.xfail + spec.xfail_compile + spec.expect_fail_if]
    if cell.backend in GPU_BUILD_BACKENDS:
        return _gpu_build(cell, spec, out_root, workdir, record)
    why = backends.unavailable_reason(cell.backend)
    if why:
        return oc.Outcome(oc.UNAVAILABLE, why, True)
    # A lit test's compiles are its RUN lines', one column's each: never the shared GPU build.
    image = builder.build_image(cell.backend, backends.image_kind(cell.backend),
                                spec.language if cell.both_sim_gpus and spec.style != "lit" else None)
    prefix, device_runtime, why = builder.toolchain(spec.language, cell.translate, image)
    if why:
        return oc.Outcome(oc.UNAVAILABLE, why, True)
    features = backend_features(cell.backend, cell.translate, spec.language, device_runtime,
                                map_check=_map_checked(cell))
    pre = oc.classify_preconditions(spec, features)
    if pre:
        return pre
    if spec.style == "lit":
        return _lit(cell, spec, features, image, workdir, record, out_root)
    b, why = builder.build(spec, cell.translate, image)
    if why:
        return oc.Outcome(oc.UNAVAILABLE, why, True)
    record["compile_command"] = b.command
    record["compile"] = "made" if b.made else "cached"
    after_build = oc.classify_build(spec, features, b.ok, b.output)
    if after_build:
        return after_build
    if spec.action != "run":
        # dg-do compile / link: building is the test.
        return oc.finish([], spec.first_holding(spec.xfail, features))
    source_dir = spec.source_dir or os.path.dirname(os.path.abspath(spec.path))
    env = backends.environment(cell.backend)
    for k, v in spec.env.items():
        env[k] = builder.substitute(v, source_dir, b.directory)
    args = [builder.substitute(a, source_dir, b.directory) for a in spec.args]
    checked = _checked(cell, env)

    def once():
        run_start = time.monotonic()
        run = execute([b.exe, *args], env, workdir, _run_timeout(cell, spec), merge_stderr=spec.style == "dejagnu")
        # The run phase alone (no build, no cache look-up): what `ompsim bench` compares across columns.
        record["run_s"] = round(time.monotonic() - run_start, 4)
        record["exit_code"] = run.exit_code
        record["stdout_tail"] = run.stdout[-2000:]
        record["stderr_tail"] = run.stderr[-2000:]
        if spec.style == "dejagnu":
            result = oc.classify_dejagnu_run(spec, features, run)
        else:
            result = oc.classify_run(spec, features, run, lambda prefix, text: filecheck(spec.path, prefix, text))
        if not checked:
            return result
        return _check_reports(result, run.stdout + "\n" + run.stderr, spec.first_holding(spec.xfail, features))
    return repeated(cell.repeat, record, past_host_runtime_defects(record, once))


#: The record's fields a run sets besides run_s; a repeated cell keeps the first failed run's.
RUN_FIELDS = ("exit_code", "stdout_tail", "stderr_tail")


def past_host_runtime_defects(record, once):
    """`once` (one run of the built program, as `repeated` takes it), made again while a
    known defect of the host OpenMP runtime (hostruntime.DEFECTS) ends its run, at most
    hostruntime.RERUNS more times. The record counts those runs in `host_runtime_reruns`
    and its notes name the defect; a run that still hits it fails, naming the defect."""
    def run():
        hits = []
        while True:
            outcome = once()
            defect = None
            if outcome.code not in oc.RUN_PASSED:
                defect = hostruntime.found(record["stdout_tail"] + "\n" + record["stderr_tail"])
            if not defect:
                break
            hits.append(defect.name)
            if len(hits) > hostruntime.RERUNS:
                outcome = oc.Outcome(oc.FAIL, "every one of %d runs was ended by %s: %s" % (
                    len(hits), defect.name, outcome.reason), False, outcome.compiler_message)
                break
        if hits:
            # One note for the cell, whose count adds up the repetitions of --repeat.
            total = record.get("host_runtime_reruns", 0) + len(hits)
            record["host_runtime_reruns"] = total
            ours = "%s ended " % hits[0]
            notes = [n for n in record["notes"].split("; ") if n and not n.startswith(ours)]
            notes.append("%s%d run%s of this cell (docs/reliability.md)" % (ours, total, "" if total == 1 else "s"))
            record["notes"] = "; ".join(notes)
        return outcome
    return run


def repeated(repeat, record, once):
    """Calls `once` (one run of the built program: it fills the record's run fields and
    returns the run's Outcome) `repeat` times and combines the outcomes (oc.combine_runs).

    Every run is made, passing or not, except that a run that times out ends the repeats
    (another could hang as long). With `repeat` 1 this is `once()`. Otherwise the record
    keeps the exit code and output of the first failed run (else of the last run), run_s
    summed over the runs, `runs` (how many ran) and `failed_runs` (their numbers, from 1).
    """
    if repeat <= 1:
        return once()
    outcomes, total, shown = [], 0.0, None
    while len(outcomes) < repeat:
        record["run_s"] = None
        outcome = once()
        outcomes.append(outcome)
        total += record["run_s"] or 0
        if shown is None and outcome.code not in oc.RUN_PASSED:
            shown = {k: record[k] for k in RUN_FIELDS}
        if outcome.code == oc.TIMEOUT:
            break
    record.update(shown or {}, run_s=round(total, 4), runs=len(outcomes), failed_runs=oc.failed_runs(outcomes))
    return oc.combine_runs(outcomes, repeat)


# --- lit --------------------------------------------------------------------------------

#: The device triples lit substitutions are spelt with, and the one each column builds for.
LIT_TRIPLES = ("x86_64-unknown-linux-gnu", "x86_64-pc-linux-gnu", "nvptx64-nvidia-cuda", "amdgcn-amd-amdhsa",
               "aarch64-unknown-linux-gnu", "powerpc64-ibm-linux-gnu", "powerpc64le-ibm-linux-gnu", "s390x-ibm-linux-gnu",
               "spirv64-intel")
#: What a substitution spelt with another target's triple becomes: lit's `echo
#: ignored-command`, as `true` (which writes nothing) so that `ignored | ignored` cannot die
#: of SIGPIPE under pipefail (lit's internal shell has no such race).
IGNORED = "true ignored-command"
_LIT_COMPOSITE = {
    # name -> expansion (into primitive substitutions), as offload/test/lit.cfg defines them
    "compile-run-and-check": "%libomptarget-compile-and-run-{t} | %fcheck-{t}",
    "compilexx-run-and-check": "%libomptarget-compilexx-and-run-{t} | %fcheck-{t}",
    "compile-fortran-run-and-check": "%libomptarget-compile-fortran-and-run-{t} | %fcheck-{t}",
    "compileopt-run-and-check": "%libomptarget-compileopt-and-run-{t} | %fcheck-{t}",
    "compileoptxx-run-and-check": "%libomptarget-compileoptxx-and-run-{t} | %fcheck-{t}",
    "compile-and-run": "%libomptarget-compile-{t} && %libomptarget-run-{t}",
    "compilexx-and-run": "%libomptarget-compilexx-{t} && %libomptarget-run-{t}",
    "compile-fortran-and-run": "%libomptarget-compile-fortran-{t} && %libomptarget-run-{t}",
    "compileopt-and-run": "%libomptarget-compileopt-{t} && %libomptarget-run-{t}",
    "compileoptxx-and-run": "%libomptarget-compileoptxx-{t} && %libomptarget-run-{t}",
}
#: The link lit's compile-and-link substitutions make uses ld.lld-22 on every column (as
#: `ompsim cc` does): GNU ld spends about a second of each link reading the symbols of
#: the libraries libomptarget.so needs, and which linker links the host program is not
#: what a column tests.
LIT_LINKER = "-fuse-ld=lld"
_LIT_COMPILE = {
    "compile": ("c", ""), "compilexx": ("c++", ""), "compile-fortran": ("fortran", ""),
    "compileopt": ("c", "-O3"), "compileoptxx": ("c++", "-O3"), "compilexxx-force-usm": ("c++", "-fopenmp-force-usm"),
}
_LIT_NAME = re.compile(r"%(libomptarget-[a-z-]+?|clangxx|clang|flang|fcheck-plain|fcheck)-(generic|"
                       + "|".join(re.escape(t) + "(?:-LTO|-JIT-LTO)?" for t in LIT_TRIPLES) + r")(?![\w-])")
_LIT_PLAIN = re.compile(r"%(openmp_flags|cuda_flags|flags_clang|flags_flang|flags|target_triple|basename_t|"
                        r"clang\+\+|clangxx|clang|flang|not|t|T|s|S|p|%)(?![\w+-])")


def _column_triples(backend):
    if backend in ("cuda-upstream", "sim-nvptx", "gpu-build:sm_90"):
        return ("nvptx64-nvidia-cuda",)
    if backend in ("amdgpu-upstream", "sim-amdgcn", "gpu-build:gfx90a"):
        return ("amdgcn-amd-amdhsa",)
    return ("x86_64-unknown-linux-gnu", "x86_64-pc-linux-gnu")


def lit_steps(spec, backend, prefixes, suite_root, tmp):
    """The RUN lines of `spec` as [(kind, shell command)], kind 'compile' or 'run'.

    `prefixes` maps a language to the column's compiler command (a list); %t is `tmp`.
    A RUN line is split at `&&` so a failing compile is told apart from a failing run.
    """
    mine = _column_triples(backend)

    def composite(m):
        name, triple = m.group(1), m.group(2)
        if triple != "generic" and triple not in mine:
            return IGNORED
        key = name[len("libomptarget-"):] if name.startswith("libomptarget-") else None
        if key in _LIT_COMPOSITE:
            return _LIT_COMPOSITE[key].format(t=triple)
        return m.group(0)

    quote = " ".join
    flags = "-I%s" % suite_root
    fc = paths.tool("FileCheck")

    def primitive(m):
        name, triple = m.group(1), m.group(2)
        if triple != "generic" and triple not in mine:
            return IGNORED
        if name.startswith("libomptarget-"):
            key = name[len("libomptarget-"):]
            if key in _LIT_COMPILE:
                lang, extra = _LIT_COMPILE[key]
                return "%s %s %s %s %s -o %s" % (quote(prefixes[lang]), flags, LIT_LINKER, extra, spec.path, tmp)
            if key == "run":
                return tmp
            if key == "run-fail":
                return "%s --crash %s" % (paths.tool("not"), tmp)
            return m.group(0)
        if name == "clang":
            return "%s %s" % (quote(prefixes["c"]), flags)
        if name == "clangxx":
            return "%s %s" % (quote(prefixes["c++"]), flags)
        if name == "flang":
            return "%s %s" % (quote(prefixes["fortran"]), flags)
        if name == "fcheck":
            return "%s %s" % (fc, spec.path)
        return fc

    plain = {"openmp_flags": "-fopenmp", "cuda_flags": "", "flags_clang": "", "flags_flang": "", "flags": flags,
             "target_triple": mine[0], "clangxx": quote(prefixes["c++"]), "clang++": quote(prefixes["c++"]),
             "clang": quote(prefixes["c"]), "basename_t": os.path.basename(tmp),
             "flang": quote(prefixes["fortran"]), "not": paths.tool("not"), "t": tmp, "T": os.path.dirname(tmp),
             "s": spec.path, "S": os.path.dirname(spec.path), "p": os.path.dirname(spec.path), "%": "%"}
    steps = []
    for line in spec.lit_runs:
        line = line.replace("%libomptarget-compilexxx-generic-force-usm", "%libomptarget-compilexxx-force-usm-generic")
        for _ in range(4):   # run-and-check -> and-run -> compile && run
            line = _LIT_NAME.sub(composite, line)
        for seg in _split_and(line):
            compiles = bool(re.search(r"%(libomptarget-compile|clang|flang)", seg))
            seg = _LIT_NAME.sub(primitive, seg)
            # A target-specific name left over; plain %clang, %clangxx, %clang++ and %flang follow.
            left = re.search(r"%(?:libomptarget[\w-]*|(?:clangxx|clang|flang|fcheck)-[\w-]+|fcheck\b)", seg)
            if left:
                raise HeaderError("lit substitution %s is not known here" % left.group(0))
            seg = _LIT_PLAIN.sub(lambda m: plain[m.group(1)], seg)
            steps.append(("compile" if compiles else "run", seg.strip()))
    return steps


def _split_and(line):
    """Splits a shell line at top-level `&&` (outside quotes); a line with `||` stays whole."""
    parts, buf, quote, i = [], [], None, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif line.startswith("||", i):
            return [line]
        elif line.startswith("&&", i):
            parts.append("".join(buf))
            buf = []
            i += 2
            continue
        buf.append(c)
        i += 1
    parts.append("".join(buf))
    return [p for p in parts if p.strip()]


def _lit(cell, spec, features, image, workdir, record, out_root=None):
    # A language the column cannot build (Fortran for a GPU's JIT image) makes only the
    # tests whose RUN lines use its compiler unavailable: its prefix is a marker here.
    prefixes, missing = {}, {}
    for lang in ("c", "c++", "fortran"):
        prefix, _, why = builder.toolchain(lang, cell.translate, image)
        if why:
            marker = "<no %s compiler here>" % lang
            missing[marker] = why
            prefix = [marker]
        prefixes[lang] = prefix
    tmp = os.path.join(workdir, "Output", os.path.basename(spec.path) + ".tmp")
    os.makedirs(os.path.dirname(tmp), exist_ok=True)
    try:
        steps = lit_steps(spec, cell.backend, prefixes, cell.suite or os.path.dirname(spec.path), tmp)
    except HeaderError as e:
        return oc.Outcome(oc.UNRESOLVED, str(e), False)
    for marker, why in missing.items():
        if any(marker in cmd for _, cmd in steps):
            return oc.Outcome(oc.UNAVAILABLE, why, True)
    plain_env = dict(os.environ)
    plain_env["PATH"] = paths.LLVM_BIN + os.pathsep + plain_env.get("PATH", "")
    run_env = backends.environment(cell.backend, plain_env)
    checked = _checked(cell, run_env)
    record["compile_command"] = "\n".join(cmd for kind, cmd in steps if kind == "compile")
    timeout = _run_timeout(cell, spec)
    built = []

    def steps_outcome(todo, out, reports):
        """Runs `todo` in order, adding to the transcript `out` and the run steps' outputs
        `reports`; the Outcome of the step that ends the test, else None."""
        for kind, cmd in todo:
            step_start = time.monotonic()
            # `not --crash` (run-fail) hides the crash it expects from the shell's status.
            r = execute(["bash", "-o", "pipefail", "-c", cmd], plain_env if kind == "compile" else run_env, workdir,
                        builder.COMPILE_TIMEOUT if kind == "compile" else timeout, merge_stderr=True,
                        crash_expected=kind == "run" and " --crash " in cmd)
            if kind == "run":
                record["run_s"] = round((record["run_s"] or 0) + time.monotonic() - step_start, 4)
            out.append("$ %s\n%s" % (cmd, r.stdout))
            record["stdout_tail"] = "\n".join(out)[-2000:]
            if kind == "compile" and r.exit_code != 0:
                return oc.classify_build(spec, features, False, r.stdout)
            if kind == "run":
                reports.append(r.stdout)
                record["exit_code"] = r.exit_code
                if r.timed_out:
                    return oc.Outcome(oc.TIMEOUT, "no exit within the time limit (a hang is never an expected outcome)",
                                      False)
                if r.exit_code != 0:
                    shown = cmd.replace(os.path.dirname(tmp), "%T")
                    return oc.finish([oc.step_problem(shown, r)], spec.first_holding(spec.xfail, features))
        return None

    def passed(reports):
        result = oc.finish([], spec.first_holding(spec.xfail, features))
        if not checked:
            return result
        return _check_reports(result, "\n".join(reports), spec.first_holding(spec.xfail, features))

    def once():
        reports = []
        return steps_outcome(steps[first_run:], list(built), reports) or passed(reports)

    # The compiles before the first run step build once; under --repeat the rest (every
    # run step, and any compile among them) is what repeats.
    first_run = next((i for i, (kind, _) in enumerate(steps) if kind == "run"), len(steps))
    if first_run and out_root:
        # Made once for the columns that compile alike, in a shared folder laid out as
        # this cell's working folder, and copied here (builder.build_lit).
        shared_tmp = os.path.join(builder.LIT_WORKDIR, os.path.relpath(tmp, workdir))
        commands = [cmd for _, cmd in lit_steps(spec, cell.backend, prefixes, cell.suite or os.path.dirname(spec.path),
                                                shared_tmp)[:first_run]]
        lit_build = builder.build_lit(spec, commands, plain_env)
        record["compile"] = "made" if lit_build.made else "cached"
        builder.mirror(lit_build.directory, workdir)
        for cmd, rc, out in lit_build.steps:
            # The transcript names this cell's folder, as if the compile had run here.
            cmd, out = (text.replace(lit_build.directory, workdir) for text in (cmd, out))
            built.append("$ %s\n%s" % (cmd, out))
            record["stdout_tail"] = "\n".join(built)[-2000:]
            if rc != 0:
                return oc.classify_build(spec, features, False, out)
    else:
        ended = steps_outcome(steps[:first_run], built, [])
        if ended:
            return ended
    if first_run == len(steps):
        return passed([])
    return repeated(cell.repeat, record, past_host_runtime_defects(record, once))


# --- compile-only GPU columns -------------------------------------------------------------

SOURCE_EXTENSIONS = tuple(suites.LANGUAGES)
#: Build flags a device-only compile keeps (the rest are link or output options).
_KEPT_FLAG = re.compile(r"^(-D|-U|-I|-std=|-include|-f(?!PIC|pic|pass-plugin)|-O)")


def _gpu_sources_and_flags(spec, workdir):
    """The sources a program is built from (main, helpers, library sources) and the flags
    that shape their device code."""
    source_dir = spec.source_dir or os.path.dirname(os.path.abspath(spec.path))
    words = list(spec.build_args)
    for _, args in spec.shlibs:
        words += args
    if spec.style == "lit":
        prefixes = {lang: ["cc"] for lang in ("c", "c++", "fortran")}
        try:
            steps = lit_steps(spec, "gpu-build:sm_90", prefixes, spec.source_dir, os.path.join(workdir, "t"))
        except HeaderError:
            steps = []     # the run columns report it; here the test file alone is built
        for kind, cmd in steps:
            if kind == "compile":
                try:
                    words += shlex.split(cmd)[1:]
                except ValueError:
                    pass
    words = [builder.substitute(w, source_dir, workdir) for w in words]
    sources = [spec.path] + list(spec.extra_sources)
    sources += [w for w in words if w.endswith(SOURCE_EXTENSIONS) and os.path.isfile(w)]
    flags = list(dict.fromkeys(w for w in words if _KEPT_FLAG.match(w) and not w.endswith(SOURCE_EXTENSIONS)))
    return list(dict.fromkeys(os.path.abspath(s) for s in sources)), flags


def _gpu_build(cell, spec, out_root, workdir, record):
    """A compile-only GPU column: device-only build of every source, the lookup check on
    the device IR, then PTX assembly (ptxas, where CUDA is installed) or the AMDGPU link."""
    arch = cell.backend.split(":", 1)[1]
    triple = gpu.triple(arch)
    features = backend_features(cell.backend, cell.translate, spec.language)
    pre = oc.classify_preconditions(spec, features)
    if pre:
        return pre
    if cell.translate == "pass" and not os.path.exists(paths.PASS_PLUGIN):
        return oc.Outcome(oc.UNAVAILABLE, "ompsim not built (%s missing)" % paths.PASS_PLUGIN, True)
    sources, flags = _gpu_sources_and_flags(spec, workdir)
    problems, notes, commands = [], [], []
    for i, src in enumerate(sources):
        lang = suites.LANGUAGES.get(os.path.splitext(src)[1], spec.language)
        if cell.translate == "pass":
            prefix = [builder.OMPSIM, "cc", "--translate=pass", "--gpu=" + arch]
        else:
            prefix = [paths.tool("flang") if lang == "fortran" else paths.tool("clang++" if lang == "c++" else "clang"),
                      "-fopenmp", "--offload-arch=" + arch, *gpu.ptx_feature_flags(arch, flags, real_ptx=True)]
        base = os.path.join(workdir, "dev%d" % i)
        steps = [[*prefix, *builder._language_flags(lang), *(builder.FORTRAN_FLAGS if lang == "fortran" else []),
                  *flags, "--offload-device-only", "-nogpulib", "-S", "-emit-llvm", src, "-o", base + ".ll"]]
        if triple.startswith("nvptx"):
            steps.append([paths.tool("llc"), "-mtriple=" + triple, "-mcpu=" + arch, base + ".ll", "-o", base + ".ptx"])
            cuda = gpu.cuda_installation()
            if cuda:
                steps.append([os.path.join(cuda, "bin", "ptxas"), "-arch=" + arch, "-c", base + ".ptx",
                              "-o", base + ".cubin"])
            elif i == 0:
                notes.append("PTX not assembled: no CUDA installation (ptxas) in %s"
                             % " or ".join(gpu.CUDA_CANDIDATES))
        else:
            steps.append([paths.tool("llc"), "-mtriple=" + triple, "-mcpu=" + arch, "-filetype=obj",
                          base + ".ll", "-o", base + ".o"])
            steps.append([paths.tool("ld.lld"), "-shared", base + ".o", "-o", base + ".so"])
        for n, cmd in enumerate(steps):
            commands.append(" ".join(cmd))
            record["compile_command"] = "\n".join(commands)
            r = execute(cmd, None, workdir, builder.COMPILE_TIMEOUT, merge_stderr=True)
            if r.exit_code != 0 or r.timed_out:
                if n == 0:
                    return oc.classify_build(spec, features, False, r.stdout)
                problems.append("%s failed: %s" % (os.path.basename(cmd[0]), oc.first_error_line(r.stdout)))
                break
            if n == 0:
                with open(base + ".ll", encoding="utf-8", errors="replace") as f:
                    rep = devir.check(f.read())
                notes.append("%s: %s" % (os.path.basename(src), rep.summary()))
                problems += rep.problems
    record["notes"] = "; ".join(notes)
    after = oc.classify_build(spec, features, True, "")
    if after:
        return after
    return oc.classify_compile_only(spec, features, problems)
