"""Names of map items in traces and diagnostics: the map clause's spelling with -g (clang's map
names), the host symbolizer's best guess without it (the global symbol, the stack frame)."""
import re

from reliability_helpers import run

PROGRAM = "map_names.c"


def entered_names(exe):
    r = run(exe, "sim", env={"OMPSIM_TRACE": "map"})
    assert r.rc == 0 and "xs[0]=11" in r.out, r.err
    return [m.group(1) for m in re.finditer(r"^\[ompsim map\] enter name=(.*?) host=", r.err, re.M)]


def test_with_debug_info_trace_events_name_items_as_the_map_clause_spells_them(built):
    assert entered_names(built(PROGRAM)) == ["xs", "p[0:2]", "table"]


def test_without_debug_info_trace_events_name_the_global_and_the_stack_frame(built):
    assert entered_names(built(PROGRAM, extra=("-g0",))) == ["<stack of 'main'>", "<stack of 'main'>", "table"]


def test_a_diagnostic_names_the_item(built):
    line = run(built(PROGRAM), "sim", ["present"]).single_error()
    assert re.fullmatch(r"ompsim: 'xs' at host address 0x[0-9a-f]+ \(16 bytes\) is not present on device 0 "
                        r"\(mapped with the present modifier\)", line), line


def test_without_debug_info_a_diagnostic_names_the_stack_frame(built):
    line = run(built(PROGRAM, extra=("-g0",)), "sim", ["present"]).single_error()
    assert re.fullmatch(r"ompsim: <stack of 'main'> at host address 0x[0-9a-f]+ \(16 bytes\) is not present on "
                        r"device 0 \(mapped with the present modifier\)", line), line
