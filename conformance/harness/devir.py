"""Checks textual device LLVM IR: every indirect call goes through the lookup first.

A compile-only GPU column cannot run a program, so it checks what a GPU would run: in
the device module, the callee of every indirect call must be the result of
`__llvm_omp_indirect_call_lookup` (through casts, phis and selects), and for a virtual
call (a slot loaded from a vtable pointer, which clang tags with the TBAA type
"vtable pointer") the vtable pointer must be looked up before the slot is read, so a
host-built, mapped object dispatches through the device vtable.
"""
import dataclasses
import re

LOOKUP = "__llvm_omp_indirect_call_lookup"

_NAME = r"%[-\w.$]+|%\"[^\"]*\""
_DEFINE = re.compile(r"^define\b.*?@([-\w.$]+|\"[^\"]*\")\(")
_ASSIGN = re.compile(r"^\s*(%s)\s*=\s*(.*)$" % _NAME)
_CALL = re.compile(r"^(?:(?:tail|musttail|notail)\s+)?(?:call|invoke|callbr)\b")
_CALLEE = re.compile(r"(%s|@[-\w.$]+|@\"[^\"]*\")\(" % _NAME)
_LOAD = re.compile(r"^load\b(?: atomic)?(?: volatile)?\s+[^,]+,\s*ptr(?: addrspace\(\d+\))?\s+(%s)" % _NAME)
_GEP = re.compile(r"^getelementptr\b.*?,\s*ptr(?: addrspace\(\d+\))?\s+(%s)" % _NAME)
_CAST = re.compile(r"^(?:bitcast|addrspacecast|ptrtoint|inttoptr)\s+\S+(?: addrspace\(\d+\))?\s+(%s)\s+to\b" % _NAME)
_PHI = re.compile(r"^phi\b")
_PHI_IN = re.compile(r"\[\s*(%s)\s*," % _NAME)
_SELECT = re.compile(r"^select\b[^,]*,\s*ptr(?: addrspace\(\d+\))?\s+(%s)\s*,\s*ptr(?: addrspace\(\d+\))?\s+(%s)" % (_NAME, _NAME))
_TBAA = re.compile(r"!tbaa\s+(!\d+)")
_MD = re.compile(r"^(!\d+)\s*=\s*(?:distinct\s+)?!\{(.*)\}\s*$")


@dataclasses.dataclass
class Report:
    """What the check found in one module."""
    indirect_calls: int
    virtual_calls: int
    problems: list      # one line each: function, callee and what is missing

    def summary(self):
        return "%d indirect call(s), %d virtual; %s" % (
            self.indirect_calls, self.virtual_calls,
            "every one looked up first" if not self.problems else "%d without the lookup" % len(self.problems))


def _vtable_tags(lines):
    """The metadata ids of TBAA access tags whose base type is "vtable pointer"."""
    nodes = {}
    for ln in lines:
        m = _MD.match(ln)
        if m:
            nodes[m.group(1)] = m.group(2)
    types = {k for k, v in nodes.items() if v.strip().startswith('!"vtable pointer"')}
    tags = set()
    for k, v in nodes.items():
        first = v.split(",")[0].strip()
        if first in types:
            tags.add(k)
    return tags


def check(text):
    """Checks a textual IR module; returns a Report."""
    lines = text.splitlines()
    vtags = _vtable_tags(lines)
    report = Report(0, 0, [])
    fn, defs = None, {}
    for ln in lines:
        m = _DEFINE.match(ln)
        if m:
            fn, defs = m.group(1), {}
            continue
        if fn is None:
            continue
        if ln.startswith("}"):
            fn = None
            continue
        a = _ASSIGN.match(ln)
        name, rhs = (a.group(1), a.group(2)) if a else (None, ln.strip())
        if name:
            defs[name] = rhs
        call = _CALL.match(rhs)
        if not call:
            continue
        tail = rhs[call.end():]
        if re.match(r"[^(]*\basm\b", tail):
            continue
        c = _CALLEE.search(tail)
        if not c or not c.group(1).startswith("%"):
            continue
        report.indirect_calls += 1
        _check_call(fn, c.group(1), defs, vtags, report)
    return report


def _strip(value, defs):
    """Follows casts back to the value they convert."""
    seen = 0
    while value in defs and seen < 16:
        m = _CAST.match(defs[value])
        if not m:
            break
        value = m.group(1)
        seen += 1
    return value


def _lookup_arg(value, defs):
    """The argument of the lookup call defining `value`, or None when it is not one."""
    rhs = defs.get(value, "")
    m = re.search(r"@%s\(ptr(?: addrspace\(\d+\))?(?: noundef)?\s+(%s)\)" % (LOOKUP, _NAME), rhs)
    return m.group(1) if m else None


def _looked_up(value, defs, depth=0):
    """True when `value` is a lookup result (through casts, phis and selects)."""
    value = _strip(value, defs)
    if _lookup_arg(value, defs) is not None:
        return True
    rhs = defs.get(value, "")
    if depth < 8 and _PHI.match(rhs):
        ins = _PHI_IN.findall(rhs)
        return bool(ins) and all(_looked_up(v, defs, depth + 1) for v in ins)
    m = _SELECT.match(rhs)
    if depth < 8 and m:
        return _looked_up(m.group(1), defs, depth + 1) and _looked_up(m.group(2), defs, depth + 1)
    return False


def _is_vtable_load(value, defs, vtags):
    rhs = defs.get(value, "")
    t = _TBAA.search(rhs)
    return bool(rhs.startswith("load") and t and t.group(1) in vtags)


def _check_call(fn, callee, defs, vtags, report):
    where = "@%s: call through %s" % (fn, callee)
    if not _looked_up(callee, defs):
        report.problems.append("%s is not preceded by %s" % (where, LOOKUP))
        fptr = _strip(callee, defs)
    else:
        fptr = _strip(_lookup_arg(_strip(callee, defs), defs) or callee, defs)
    # A virtual call: the function pointer is a slot loaded from (gep* of) a vtable pointer.
    m = _LOAD.match(defs.get(fptr, ""))
    if not m:
        return
    base, steps = _strip(m.group(1), defs), 0
    while steps < 8 and _GEP.match(defs.get(base, "")):
        base = _strip(_GEP.match(defs[base]).group(1), defs)
        steps += 1
    if _is_vtable_load(base, defs, vtags):
        report.virtual_calls += 1
        report.problems.append("%s (virtual): vtable pointer %s is read without %s" % (where, base, LOOKUP))
        return
    arg = _lookup_arg(base, defs)
    if arg is not None and _is_vtable_load(_strip(arg, defs), defs, vtags):
        report.virtual_calls += 1
