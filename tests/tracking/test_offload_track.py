"""Stock's GPU-plugin debugging variables on ompsim (docs/environment.md):
OFFLOAD_TRACK_ALLOCATION_TRACES and OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES, with stock
libomptarget 22's texts, on the cases of LLVM's offload/test/sanitizer programs that clang-22
builds (programs/track.c, one mode each).

A free stock refuses (of memory never allocated, a second free, pinned host memory freed as
device memory) is checked against stock itself: its host plugin reports them alike, so every
line but the addresses, and each trace's frames in the program, must be stock's. A kernel
fault's report (the last kernels launched, the allocation a fault address points into) is what
only stock's GPU plugins print: the texts LLVM's sanitizer tests look for are checked."""
import re
import signal

import pytest

from reliability_helpers import ompsim_lines, run

pytestmark = pytest.mark.e2e

TRACK_ALLOCATIONS = {"OFFLOAD_TRACK_ALLOCATION_TRACES": "1"}
# (architecture of the build, backend): every image kind ompsim runs.
OURS = [("x86_64", "ours-host"), ("x86_64", "sim"), ("sm_90", "sim"), ("gfx90a", "sim")]
GPU_RUNS = [("x86_64", "sim"), ("sm_90", "sim"), ("gfx90a", "sim")]
FRAME = re.compile(r"    #[ \d]+ 0x[0-9a-f]+ (.*)$")
PROGRAM_FRAME = re.compile(r"(\w+) \S*track\.c:\d+:\d+$")
KERNEL = r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_%s_l%d"


def line_of(text, nth=0):
    """The line of programs/track.c that holds `text`."""
    with open(__file__.replace("test_offload_track.py", "programs/track.c")) as f:
        return [i + 1 for i, t in enumerate(f.read().splitlines()) if text in t][nth]


def sections(stderr):
    """The report as (line, [the program's frames in the stack trace under it]): every line but
    the frames, its addresses as 0xADDR, each with the frames of track.c that follow it."""
    out = []
    for l in stderr.splitlines():
        m = FRAME.match(l)
        if m:
            if out and PROGRAM_FRAME.search(m.group(1)):
                out[-1][1].append(PROGRAM_FRAME.search(m.group(1)).group(0).split("/")[-1])
            continue
        if l:
            out.append((re.sub(r"0x[0-9a-f]+", "0xADDR", l), []))
    return out


def names_line(program_frames, line):
    """Whether one of a trace's program frames is at `line`: a frame names the place its call
    returns to, which is the line after the call's where the call ends its statement."""
    return any(re.search(r":(%d|%d):" % (line, line + 1), f) for f in program_frames)


def frames(stderr):
    """Every stack frame of a report, as the symbolizer names it."""
    return [m.group(1) for m in map(FRAME.match, stderr.splitlines()) if m]


@pytest.mark.parametrize("mode", ["free-host-ptr", "free-wrong-kind", "double-free"])
def test_a_free_stock_refuses_ends_the_program_with_stocks_report(built, mode):
    stock = run(built("x86_64"), "host-upstream", [mode], env=TRACK_ALLOCATIONS)
    assert stock.rc == -signal.SIGABRT, stock.err
    expected = sections(stock.err)
    assert expected[0][0].startswith("OFFLOAD ERROR: "), stock.err
    for arch, backend in OURS:
        r = run(built(arch), backend, [mode], env=TRACK_ALLOCATIONS)
        assert r.rc == -signal.SIGABRT and "not reached" not in r.out, (arch, backend, r.err)
        assert sections(r.err) == expected, (arch, backend, r.err)
        assert r.leftover == [], r.leftover


def test_the_report_names_each_step_of_a_double_free_as_stock_does(built):
    """double_free.c's expectations: the second free, the free before it, the allocation, and the
    allocations before it at the same address, each with its call and the program's line."""
    r = run(built("sm_90"), "sim", ["double-free"], env=TRACK_ALLOCATIONS)
    got = sections(r.err)
    assert [line for line, _ in got] == [
        "OFFLOAD ERROR: double-free of device memory: 0xADDR",
        "Last deallocation:",
        "Last allocation of size 8 -> device pointer 0xADDR:",
        "Prior allocations with the same base pointer:",
        " #0 Prior deallocation of size 8:",
        " #0 Prior allocation -> device pointer 0xADDR:",
        " #1 Prior deallocation of size 8:",
        " #1 Prior allocation -> device pointer 0xADDR:"], r.err
    lines = [line_of(t) for t in ("free 2 again", "free 3", "alloc 3", "free 2", "alloc 2", "free 1", "alloc 1")]
    traced = [program_frames for line, program_frames in got if not line.startswith("Prior allocations")]
    for program_frames, line in zip(traced, lines):
        assert names_line(program_frames, line), (line, program_frames, r.err)
    assert "omp_target_free" in " ".join(frames(r.err)) and "dataDelete" in " ".join(frames(r.err))
    assert "omp_target_alloc" in " ".join(frames(r.err)) and "dataAlloc" in " ".join(frames(r.err))


def test_the_cpp_build_reports_a_free_of_the_wrong_kind(built):
    """free_wrong_ptr_kind.cpp: the program built as C++."""
    r = run(built("sm_90", "track.cpp"), "sim", ["free-wrong-kind"], env=TRACK_ALLOCATIONS)
    got = sections(r.err)
    assert [line for line, _ in got] == [
        "OFFLOAD ERROR: deallocation requires device memory but allocation was pinned host memory: 0xADDR",
        "Last allocation of size 8 -> device pointer 0xADDR:"], r.err
    assert "llvm_omp_target_alloc_host" in " ".join(frames(r.err)), r.err


def test_without_the_variable_a_bad_free_is_one_line_and_the_program_goes_on(built):
    for arch, backend in OURS:
        r = run(built(arch), backend, ["double-free"])
        assert r.rc == 0 and r.out == "not reached\n", (arch, backend, r.err)
        assert len(ompsim_lines(r.err)) == 1 and "OFFLOAD ERROR" not in r.err, (arch, backend, r.err)


@pytest.mark.parametrize("mode", ["kernel-crash", "kernel-trap"])
@pytest.mark.parametrize("arch,backend", GPU_RUNS)
def test_a_kernel_fault_lists_the_kernels_launched_before_it(built, arch, backend, mode):
    """kernel_crash.c and kernel_trap.c without traces: the three kernels launched, the failing
    one first; then the construct's failure as before."""
    r = run(built(arch), backend, [mode], env={"OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES": "0"})
    assert r.rc == -signal.SIGABRT and "not reached" not in r.out, r.err
    lines = r.err.splitlines()
    assert lines[0] == "Display last 3 kernels launched:", r.err
    for i, k in enumerate((3, 2, 1)):
        line = line_of("// kernel %d" % k)
        assert re.fullmatch(r"Kernel %d: 'omp target in kernelFails @ %d \(%s\)'" % (
            i, line, KERNEL % ("kernelFails", line)), lines[1 + i]), r.err
    assert lines[4] == ("Use 'OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES=<num>' to adjust the number of shown stack "
                        "traces (0 now, up to 8)"), r.err
    assert lines[5] == "omptarget error: Executing target region abort target.", r.err
    fault = [l for l in lines if l.startswith("ompsim: ")]
    assert len(fault) == 1, r.err
    if mode == "kernel-trap":
        assert "execution interrupted by a trap instruction (SIGILL)" in fault[0], r.err
        assert lines[-1] == fault[0], r.err
    else:
        assert "wrote a null pointer" in fault[0], r.err
        # The fault has an address: stock's hint on the allocation traces follows.
        assert lines[-1] == "Use 'OFFLOAD_TRACK_ALLOCATION_TRACES=true' to track device allocations", r.err


def test_traces_asked_for_show_the_launch_of_the_failing_kernel(built):
    """kernel_crash.c with OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES=1: the failing kernel's launch
    with its trace (launchKernel, the program's line), the others by name."""
    r = run(built("sm_90"), "sim", ["kernel-crash"], env={"OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES": "1"})
    got = sections(r.err)
    assert got[0] == ("Display 1 of the 3 last kernel launch traces:", []), r.err
    assert re.fullmatch(r"Kernel 0: 'omp target in kernelFails @ %d \(%s\)'" % (
        line_of("// kernel 3"), KERNEL % ("kernelFails", line_of("// kernel 3"))), got[1][0]), r.err
    assert names_line(got[1][1], line_of("// kernel 3")), r.err
    assert "launchKernel" in r.err.split("Kernel 1:")[0], r.err
    assert got[2][0].startswith("Kernel 1: ") and got[2][1] == [], r.err
    assert got[3][0].startswith("Kernel 2: ") and got[3][1] == [], r.err


def test_the_record_keeps_the_last_eight_launches(built):
    """kernel_crash_many.c with 24 traces asked for: stock's record holds 8."""
    r = run(built("gfx90a"), "sim", ["kernel-crash-many"], env={"OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES": "24"})
    got = sections(r.err)
    assert got[0][0] == "Display 8 of the 8 last kernel launch traces:", r.err
    after, loop = line_of("// kernel after the loop"), line_of("// kernel in the loop")
    for i, line in enumerate([after] + [loop] * 7):
        assert re.fullmatch(r"Kernel %d: 'omp target in kernelCrashMany @ %d \(%s\)'" % (
            i, line, KERNEL % ("kernelCrashMany", line)), got[1 + i][0]), r.err
    assert all(program_frames for _, program_frames in got[1:9]), r.err
    assert got[9][0] == ("Use 'OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES=<num>' to adjust the number of shown stack "
                         "traces (24 now, up to 8)"), r.err
    assert not any(l.startswith("Kernel 8:") for l, _ in got), r.err


@pytest.mark.parametrize("arch,backend", GPU_RUNS)
def test_a_write_after_free_names_the_freed_allocation_and_its_free(built, arch, backend):
    """use_after_free_1.c, under the checker (which keeps freed device memory inaccessible):
    the fault's line names the write, and stock's lines the allocation it points into, with
    the free and the allocation that made it."""
    r = run(built(arch), backend, ["use-after-free"], env={"OMPSIM_CHECK": "1", **TRACK_ALLOCATIONS})
    assert r.rc == -signal.SIGABRT, r.err
    got = sections(r.err)
    fault = [i for i, (l, _) in enumerate(got) if l.startswith("ompsim: ")]
    assert len(fault) == 1, r.err
    # The checker reads what a GPU image's store changes before it lands: the fault is the
    # kernel's write, at its line, not the checker's.
    assert "wrote device memory" in got[fault[0]][0], r.err
    if arch != "x86_64":
        assert "track.c:%d:" % line_of("*P = 5;") in got[fault[0]][0], r.err
    after = got[fault[0] + 1:]
    assert [l for l, _ in after] == [
        "Device pointer 0xADDR points into prior host-issued allocation:",
        "Last deallocation:",
        "Last allocation of size 1048576 -> device pointer 0xADDR:"], r.err
    assert names_line(after[1][1], line_of("free the block")), r.err
    assert names_line(after[2][1], line_of("alloc the block")), r.err


@pytest.mark.parametrize("arch,backend", GPU_RUNS)
def test_a_write_outside_any_allocation_names_the_closest_one(built, arch, backend):
    """ptr_outside_alloc_1.c, under the checker: 4 bytes past a 64-byte block's end."""
    r = run(built(arch), backend, ["ptr-outside-alloc"], env={"OMPSIM_CHECK": "1", **TRACK_ALLOCATIONS})
    assert r.rc == -signal.SIGABRT, r.err
    got = [l for l, _ in sections(r.err)]
    tail = got[next(i for i, l in enumerate(got) if l.startswith("ompsim: ")) + 1:]
    assert tail == [
        "Device pointer 0xADDR does not point into any (current or prior) host-issued allocation.",
        "Closest host-issued allocation (distance 5 bytes; might be by page):",
        "Last allocation of size 64 -> device pointer 0xADDR:"], r.err


def test_without_the_variables_a_kernel_fault_is_one_line(built):
    r = run(built("sm_90"), "sim", ["kernel-crash"])
    assert r.rc == -signal.SIGABRT, r.err
    assert r.single_error() and "Display" not in r.err and "OFFLOAD_TRACK" not in r.err, r.err
