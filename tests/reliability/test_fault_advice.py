"""Diagnoses that say how to fix the program, on backend sim: one line, the fix in a `note:`."""
import re
import signal

from reliability_helpers import KERNEL, ompsim_lines, run

# tests/reliability/programs/fault_advice.c: argv[1] picks the mistake.
PROGRAM = "fault_advice.c"

NO_LOOKUP = (r"clang-22 emits no call-site lookup; build with 'ompsim cc' \(the default --translate=pass\) "
             r"or a compiler that emits one")
DEVICE_MEMORY = (r"that is not host memory but device 0's allocation (0x[0-9a-f]+) \(64 bytes, made by "
                 r"omp_target_alloc\); pass device memory with its device number and map host data only")


def test_program_runs_without_a_mistake(built):
    r = run(built(PROGRAM), "sim", ["ok"])
    assert r.rc == 0 and "r=42" in r.out, r.err


def test_pointer_to_a_function_that_is_not_indirect(built):
    line = run(built(PROGRAM), "sim", ["plain"]).single_error()
    assert re.fullmatch(r"ompsim: device 0: kernel %s called untranslated host function pointer 0x[0-9a-f]+ "
                        r"\(host symbol 'plain' in \S*fault_advice\.exe\); note: 'plain' \(defined at "
                        r"\S*/tests/reliability/programs/fault_advice\.c:5\) is not declare target indirect, "
                        r"so the device cannot call it through a host pointer: add "
                        r"'#pragma omp declare target to\(plain\) indirect'" % KERNEL, line), line


def test_pointer_to_an_indirect_function_the_call_site_did_not_translate(built):
    line = run(built(PROGRAM), "sim", ["indirect"]).single_error()
    assert re.fullmatch(r"ompsim: device 0: kernel %s called untranslated host function pointer 0x[0-9a-f]+ "
                        r"\(host symbol 'add1' in \S*fault_advice\.exe\); note: 'add1' is declare target "
                        r"indirect, but the call site did not translate the pointer: %s" % (KERNEL, NO_LOOKUP),
                        line), line


def test_the_pass_translates_the_indirect_function(built):
    # What the note advises works: the same program built by `ompsim cc`.
    r = run(built(PROGRAM, translate="pass"), "sim", ["indirect"])
    assert r.rc == 0 and "r=42" in r.out, r.err


def test_read_of_host_data_suggests_a_map_clause(built):
    line = run(built(PROGRAM), "sim", ["hostread"]).single_error()
    assert re.fullmatch(r"ompsim: device 0: kernel (%s) read host data at host:0x[0-9a-f]+ \(host symbol "
                        r"'host_counter' in \S*fault_advice\.exe\) from dev:\1\+0x[0-9a-f]+ \(0x[0-9a-f]+\); "
                        r"'hp' \(firstprivate or is_device_ptr\) holds that address; note: 'host_counter' is host "
                        r"data the device cannot reach: map it "
                        r"\('map\(to: host_counter\)'\) or make it device data "
                        r"\('#pragma omp declare target to\(host_counter\)'\)" % KERNEL, line), line


def test_write_of_host_data_suggests_a_tofrom_map(built):
    line = run(built(PROGRAM), "sim", ["hostwrite"]).single_error()
    assert re.fullmatch(r"ompsim: device 0: kernel (%s) wrote host data at host:0x[0-9a-f]+ \(host symbol "
                        r"'host_counter' in \S*fault_advice\.exe\) from dev:\1\+0x[0-9a-f]+ \(0x[0-9a-f]+\); "
                        r"'hp' \(firstprivate or is_device_ptr\) holds that address; note: 'host_counter' is host "
                        r"data the device cannot reach: map it "
                        r"\('map\(tofrom: host_counter\)'\) or make it device data "
                        r"\('#pragma omp declare target to\(host_counter\)'\)" % KERNEL, line), line


def test_device_pointer_as_the_host_source_of_omp_target_memcpy(built):
    r = run(built(PROGRAM), "sim", ["memcpy"])
    line = r.single_error()
    m = re.fullmatch(r"ompsim: device 0: copying 64 bytes to the device from host address (0x[0-9a-f]+): "
                     + DEVICE_MEMORY, line)
    assert m and m.group(1) == m.group(2), line
    assert "rc=-1" in r.out, r.out  # the call fails; the host process survives


def test_device_pointer_as_the_host_destination_of_omp_target_memcpy(built):
    r = run(built(PROGRAM), "sim", ["memcpy-to-host"])
    line = r.single_error()
    m = re.fullmatch(r"ompsim: device 0: copying 64 bytes from the device to host address (0x[0-9a-f]+): "
                     + DEVICE_MEMORY, line)
    assert m and m.group(1) == m.group(2), line
    assert "rc=-1" in r.out, r.out


def test_device_pointer_mapped_as_host_data(built):
    line = run(built(PROGRAM), "sim", ["map"]).single_error()
    m = re.fullmatch(r"ompsim: device 0: copying 64 bytes to the device from host address (0x[0-9a-f]+): "
                     + DEVICE_MEMORY, line)
    assert m and m.group(1) == m.group(2), line


def test_host_code_dereferencing_device_memory_is_named(built):
    # The host process faults, as on a GPU without unified memory; the line says whose memory the
    # address is, and the process still ends with the fault's signal.
    r = run(built(PROGRAM), "sim", ["hostderef"])
    assert r.rc == -signal.SIGSEGV, (r.rc, r.err)
    lines = ompsim_lines(r.err)
    assert len(lines) == 1, r.err
    assert r.leftover == [], "executor(s) %s outlived host %d" % (r.leftover, r.pid)
    line = lines[0]
    m = re.fullmatch(r"ompsim: host code dereferenced (0x[0-9a-f]+), which is device 0's allocation (0x[0-9a-f]+) "
                     r"\(64 bytes, made by omp_target_alloc\): device memory is not the host's \(a use_device_ptr "
                     r"or use_device_addr variable, or what omp_target_alloc or omp_get_mapped_ptr returned, was "
                     r"read or written on the host\); the stock host plugin shares the host's memory and hides "
                     r"this", line)
    assert m and m.group(1) == m.group(2), line
