"""The fault advisor on backend sim: a device fault on a data address names what the address is
(host stack, heap, global, the host copy of a mapped block, a freed device copy) and ends with
a `note:` on the fix, in one line. Exact text; regexes only for addresses."""
import os
import re

import pytest

from reliability_helpers import compile_program, run

PROGRAM = "data_faults.c"
HEX = r"0x[0-9a-f]+"
SUITE_TEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "suites",
                          "openmp-vv", "tests", "5.1", "target_update", "test_target_update_iterator.c")


def line_of(directive, then=""):
    """The line of programs/data_faults.c that holds `directive`, followed by the line `then` when
    given (the constructs the fault lines name)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", PROGRAM)) as f:
        text = f.read().splitlines() + [""]
    lines = [i + 1 for i, t in enumerate(text[:-1]) if directive in t and (not then or text[i + 1].strip() == then)]
    assert len(lines) == 1, (directive, then)
    return lines[0]


def kernel(fn):
    return r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_%s_l\d+" % fn


def fault_line(exe, mode, env=None):
    return run(exe, "sim", [mode], env=env).single_error()


def test_host_stack_names_the_frame_and_the_firstprivate_pointer(built):
    line = fault_line(built(PROGRAM), "stack")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host stack memory at host:%s \(in the frame of 'read_stack'\) "
        r"from dev:\1\+0x[0-9a-f]+ \(%s\); 'p' \(firstprivate or is_device_ptr\) holds that address; note: the device "
        r"cannot "
        r"reach host memory: map what the pointer points to \('map\(to: p\[0:n\]\)'\) so that the region "
        r"gets its device address" % (kernel("read_stack"), HEX, HEX), line), line


def test_pointer_used_without_a_map_clause_is_a_zero_length_section(built):
    line = fault_line(built(PROGRAM), "implicit")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host stack memory at host:%s \(in the frame of 'read_implicit'\) "
        r"from dev:\1\+0x[0-9a-f]+ \(%s\); 'p' \(mapped as a zero-length section\) holds that address; note: "
        r"the device cannot reach host memory: map what the pointer points to \('map\(to: p\[0:n\]\)'\) so "
        r"that the region gets its device address" % (kernel("read_implicit"), HEX, HEX), line), line


def test_host_heap(built):
    line = fault_line(built(PROGRAM), "heap")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host heap memory at host:%s from dev:\1\+0x[0-9a-f]+ \(%s\); "
        r"'h' \(firstprivate or is_device_ptr\) holds that address; note: the device cannot reach host memory: map "
        r"what the "
        r"pointer points to \('map\(to: h\[0:n\]\)'\) so that the region gets its device address"
        % (kernel("read_heap"), HEX, HEX), line), line


def test_stack_of_another_host_thread(built):
    line = fault_line(built(PROGRAM), "thread")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host stack memory of another thread at host:%s from "
        r"dev:\1\+0x[0-9a-f]+ \(%s\); 'q' \(firstprivate or is_device_ptr\) holds that address; note: the device "
        r"cannot "
        r"reach host memory: map what the pointer points to \('map\(to: q\[0:n\]\)'\) so that the region "
        r"gets its device address" % (kernel("read_other_thread"), HEX, HEX), line), line


def test_memory_of_another_device(built):
    line = fault_line(built(PROGRAM), "device1", env={"OMPSIM_NUM_DEVICES": "2"})
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read device 1's memory at dev:%s from dev:\1\+0x[0-9a-f]+ \(%s\); "
        r"note: device 0 cannot reach the memory of device 1: run the region on device 1 or copy the data "
        r"\(omp_target_memcpy\)" % (kernel("read_other_device"), HEX, HEX), line), line


def test_the_trace_labels_the_fault_address_host_and_the_instruction_dev(built):
    r = run(built(PROGRAM), "sim", ["heap"], env={"OMPSIM_TRACE": "fault"})
    event = [l for l in r.err.splitlines() if l.startswith("[ompsim fault] device-fault ")]
    assert len(event) == 1, r.err
    assert re.search(r" addr=host:\? \(%s\) rip=dev:%s\+0x[0-9a-f]+ \(%s\)$" % (HEX, kernel("read_heap"), HEX),
                     event[0]), event[0]
    advice = [l for l in r.err.splitlines() if l.startswith("[ompsim fault] data-fault ")]
    assert len(advice) == 1 and "read host heap memory at host:0x" in advice[0], r.err


def test_host_global_written(built):
    line = fault_line(built(PROGRAM), "global")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) wrote host data at host:%s \(host symbol 'host_table\+0x14' in "
        r"\S*data_faults\.exe\) from dev:\1\+0x[0-9a-f]+ \(%s\); 'g' \(firstprivate or is_device_ptr\) holds that "
        r"address; "
        r"note: 'host_table' is host data the device cannot reach: map it \('map\(tofrom: host_table\)'\) "
        r"or make it device data \('#pragma omp declare target to\(host_table\)'\)"
        % (kernel("write_global"), HEX, HEX), line), line


def test_host_copy_of_a_mapped_block_through_a_firstprivate_pointer(built):
    line = fault_line(built(PROGRAM), "mapped")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host heap memory at host:%s \(12 bytes into the host copy of "
        r"'a\[0:64\]' \(256 bytes\), mapped on device 0 at dev:%s by the data construct at "
        r"data_faults\.c:%d\) from dev:\1\+0x[0-9a-f]+ \(%s\); 'a' \(firstprivate or is_device_ptr\) holds that "
        r"address; "
        r"note: 'a' is passed by value, so the region got its host value: map it instead \('map\(a\[:0\]\)' "
        r"finds the device copy of 'a\[0:64\]' and passes its device address\)"
        % (kernel("read_mapped"), HEX, HEX, line_of("enter data map(to : a[0:64])"), HEX), line), line


def test_host_copy_of_a_mapped_block_through_a_pointer_member_not_attached(built):
    line = fault_line(built(PROGRAM), "member")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host heap memory at host:%s \(12 bytes into the host copy of "
        r"'s\.data\[0:64\]' \(256 bytes\), mapped on device 0 at dev:%s by the data construct at "
        r"data_faults\.c:%d\) from dev:\1\+0x[0-9a-f]+ \(%s\); the pointer at byte 8 of 's' holds that "
        r"address: 's' is mapped in this region, but the pointer was not attached in it; note: attach the "
        r"pointer: map its pointee in this region too \(add 'map\(s\.data\[0:64\]\)'; the block is present, "
        r"so nothing is copied\)"
        % (kernel("read_member"), HEX, HEX,
           line_of("enter data map(to : s.data[0:64])", "#pragma omp target map(from : r)"), HEX), line), line


def test_host_copy_of_a_mapped_block_through_a_pointer_in_a_firstprivate_struct(built):
    line = fault_line(built(PROGRAM), "privmember")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host heap memory at host:%s \(12 bytes into the host copy of "
        r"'s\.data\[0:64\]' \(256 bytes\), mapped on device 0 at dev:%s by the data construct at "
        r"data_faults\.c:%d\) from dev:\1\+0x[0-9a-f]+ \(%s\); the pointer at byte 8 of 's' \(firstprivate\) "
        r"holds that address; note: a firstprivate copy keeps the host value of its pointers: map 's' with its "
        r"pointee \('map\(to: s, s\.data\[0:64\]\)'\) so that the pointer is attached"
        % (kernel("read_private_member"), HEX, HEX,
           line_of("enter data map(to : s.data[0:64])", "#pragma omp target map(from : r) firstprivate(s)"), HEX),
        line), line


def test_without_debug_info_the_symbolizer_names_the_stack_frame(built):
    line = fault_line(built(PROGRAM, extra=("-g0",)), "member")
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host heap memory at host:%s \(12 bytes into the host copy of "
        r"a mapped block \(256 bytes\), mapped on device 0 at dev:%s by a data construct\) from "
        r"dev:\1\+0x[0-9a-f]+ \(%s\); the pointer at byte 8 of <stack of 'read_member'> holds that address: "
        r"<stack of 'read_member'> is mapped in this region, but the pointer was not attached in it; note: "
        r"attach the pointer: map its pointee's array section in this region too \(the block is present, "
        r"so nothing is copied\)" % (kernel("read_member"), HEX, HEX, HEX), line), line


def test_freed_device_copy_names_the_mapping_and_the_construct_that_ended_it(built):
    # The kernel reads through omp_get_mapped_ptr's pointer after 'target exit data' freed the
    # block. Freed device memory faults only where its pages are taken away: the map checker's
    # quarantine (OMPSIM_CHECK) does that; without it the read returns stale data. The checker's
    # own report of the same bug comes first.
    r = run(built(PROGRAM), "sim", ["freed"], env={"OMPSIM_CHECK": "1"})
    assert r.rc != 0, r.err
    lines = [ln for ln in r.err.splitlines() if ln.startswith("ompsim: device 0: kernel ")]
    assert len(lines) == 1, r.err
    line = lines[0]
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read freed device memory at dev:%s \(33554432 bytes into the old "
        r"device copy of 'big\[0:n\]' \(67108864 bytes\), mapped by the data construct at "
        r"data_faults\.c:%d; freed when the data construct at data_faults\.c:%d ended its mapping\) from "
        r"dev:\1\+0x[0-9a-f]+ \(%s\); note: a device pointer outlived its mapping: keep 'big\[0:n\]' mapped "
        r"while device code uses its device address \('target enter data' with the matching 'exit data' "
        r"after the last region, or a longer 'target data'\)"
        % (kernel("read_freed"), HEX, line_of("enter data map(to : big[0:n])"),
           line_of("exit data map(delete : big[0:n])"), HEX), line), line


def test_validation_suite_struct_mapped_implicitly_without_attach(tmp_path):
    # OpenMP_VV's test_target_update_iterator.c: the second region maps the struct implicitly, so its
    # pointer member keeps the host address of the pointee an earlier 'enter data' mapped.
    if not os.path.exists(SUITE_TEST):
        pytest.skip("../shared/suites/openmp-vv is absent")
    from reliability_helpers import compile_program
    suite = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(SUITE_TEST))))
    exe = compile_program(SUITE_TEST, tmp_path, "native", ("-I" + os.path.join(suite, "ompvv"), "-lm"))
    line = run(exe, "sim").single_error()
    assert re.fullmatch(
        r"ompsim: device 0: kernel (%s) read host heap memory at host:%s \(the start of the host copy of "
        r"'new_struct\.data\[:1024\]' \(4096 bytes\), mapped on device 0 at dev:%s by the data construct "
        r"at test_target_update_iterator\.c:53\) from dev:\1\+0x[0-9a-f]+ \(%s\); the pointer at byte 8 of "
        r"'new_struct' holds that address: 'new_struct' is mapped in this region, but the pointer was not "
        r"attached in it; note: attach the pointer: map its pointee in this region too \(add "
        r"'map\(new_struct\.data\[:1024\]\)'; the block is present, so nothing is copied\)"
        % (kernel("test_target_update_iterator"), HEX, HEX, HEX), line), line


def test_inspect_of_the_trace_names_the_fault(built, tmp_path):
    # `ompsim inspect TRACE` lists the advisor's line under the run's findings, as printed.
    import subprocess
    trace = tmp_path / "trace.jsonl"
    r = run(built(PROGRAM), "sim", ["global"], env={"OMPSIM_TRACE": "all", "OMPSIM_TRACE_FILE": str(trace)})
    printed = r.single_error()[len("ompsim: "):]
    ompsim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "ompsim")
    shown = subprocess.run([ompsim, "inspect", str(trace)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "  data faults (1):" in lines, shown.stdout
    assert lines[lines.index("  data faults (1):") + 1] == "    " + printed


@pytest.mark.parametrize("image", ["x86_64", "nvptx64"])
def test_a_fault_inside_a_library_function_names_the_function_not_a_map_clause(built, tmp_path, image):
    # The kernel's own code did not fault: libm's sincos did, with the null
    # out-pointer the kernel passed it. sincos is an IFUNC (its code is
    # __sincos_fma or another variant, which a stripped libm does not name).
    if image == "x86_64":
        exe = built("library_fault.c", ["-lm"])
    else:
        exe = compile_program(os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs",
                                           "library_fault.c"), tmp_path, "pass", ["--offload-arch=sm_90", "-lm"])
    line = run(exe, "sim").single_error()
    assert re.fullmatch(
        r"ompsim: device 0: kernel %s wrote a null pointer \(address 0x0\) from sincos\+0x[0-9a-f]+ in "
        r"libm\.so\.6 \(%s\); note: the fault is inside the library function 'sincos' \(libm\.so\.6\), which "
        r"the kernel called: a pointer the kernel passes it \(an out-pointer, a buffer\) does not hold device "
        r"memory of the size the function uses" % (kernel("main"), HEX), line), line
