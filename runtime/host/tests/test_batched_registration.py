"""Registration of many indirect functions and vtables, where the runtime
looks every device global of an image up in one plugin request
(__tgt_rtl_get_globals): every pair of the function-pointer table reaches the
right device function on the out-of-process `sim` device and on `ours-host`,
and both publish tables over the same host functions and vtables."""
import json
import re
import subprocess

import pytest

from ompsim_base import backends

pytestmark = pytest.mark.e2e

FUNCTIONS, CLASSES = 400, 24


def program():
    classes = "\n".join("struct C%d : Base { int apply(int x) const override; };" % c for c in range(CLASSES))
    methods = "\n".join("int C%d::apply(int x) const { return x * %d + %d; }" % (c, c % 5 + 2, c) for c in range(CLASSES))
    functions = "\n".join("int f%d(int x) { return x * %d + %d; }" % (i, i % 7 + 1, i) for i in range(FUNCTIONS))
    objects = " ".join("C%d o%d;" % (c, c) for c in range(CLASSES))
    mapped = ", ".join("o%d" % c for c in range(CLASSES))
    pointers = ", ".join("&o%d" % c for c in range(CLASSES))
    return r"""#include <cstdio>
struct Base {
  virtual int apply(int x) const;
  virtual ~Base() = default;
};
%(classes)s
#pragma omp begin declare target indirect
int Base::apply(int x) const { return x; }
%(methods)s
%(functions)s
#pragma omp end declare target
#define F(i) f##i
int (*table[])(int) = {%(table)s};
enum { NF = %(nf)d, NC = %(nc)d };
int main() {
  %(objects)s
  int out_f[NF], out_c[NC];
#pragma omp target map(to : table) map(from : out_f)
  for (int i = 0; i < NF; ++i)
    out_f[i] = table[i](i);
#pragma omp target map(to : %(mapped)s) map(from : out_c)
  {
    const Base *objs[NC] = {%(pointers)s};
    for (int c = 0; c < NC; ++c)
      out_c[c] = objs[c]->apply(c);
  }
  int bad = 0;
  for (int i = 0; i < NF; ++i)
    bad += out_f[i] != i * (i %% 7 + 1) + i;
  for (int c = 0; c < NC; ++c)
    bad += out_c[c] != c * (c %% 5 + 2) + c;
  std::printf("functions=%%d classes=%%d mismatches=%%d\n", NF, NC, bad);
  return bad != 0;
}
""" % {"classes": classes, "methods": methods, "functions": functions, "objects": objects, "mapped": mapped,
       "pointers": pointers, "table": ", ".join("f%d" % i for i in range(FUNCTIONS)), "nf": FUNCTIONS,
       "nc": CLASSES}


def run_traced(offload, exe, backend):
    why = backends.unavailable_reason(backend)
    if why:
        pytest.skip("backend %s unavailable: %s" % (backend, why))
    trace = offload.tmp / ("table-%s.jsonl" % backend)
    env = backends.environment(backend)
    env.update({"OMPSIM_TRACE": "table,entry", "OMPSIM_TRACE_FILE": str(trace)})
    r = subprocess.run([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       cwd=offload.tmp, timeout=600)
    assert r.returncode == 0, "exit %d on %s\n%s\n%s" % (r.returncode, backend, r.stdout, r.stderr[-3000:])
    assert "functions=%d classes=%d mismatches=0" % (FUNCTIONS, CLASSES) in r.stdout, r.stdout
    events = [json.loads(l) for l in trace.read_text().splitlines() if l.strip()]
    return events


def host_name(value):
    """The symbol part of a traced host address ("host:f12(int)+0x0 (0x...)" -> "f12(int)+0x0")."""
    m = re.match(r"host:(.+?)(?: \(0x[0-9a-f]+\))?$", str(value))
    return m.group(1) if m else None


def test_many_indirect_functions_and_vtables_register_alike_on_sim_and_ours_host(offload):
    exe = offload.compile(program(), name="registration.cpp", translate="pass")
    tables = {}
    for backend in ("sim", "ours-host"):
        events = run_traced(offload, exe, backend)
        pairs = [e for e in events if e.get("cat") == "table" and e.get("event") == "pair"]
        names = sorted(filter(None, (host_name(e.get("host")) for e in pairs)))
        assert len(names) == len(pairs), pairs[:5]
        # The first publish holds every registered pair; each host address at most once.
        first = [e for e in events if e.get("cat") == "table" and e.get("event") == "publish"][0]
        assert first["n"] >= FUNCTIONS + CLASSES + 1, first
        devices = [e.get("device_ptr") for e in pairs]
        assert all(d and str(d).startswith("dev:") for d in devices), devices[:5]
        tables[backend] = names
        for i in (0, FUNCTIONS // 2, FUNCTIONS - 1):
            assert "f%d(int)+0x0" % i in names, names[:10]
        for c in (0, CLASSES - 1):
            assert any(n.startswith("vtable for C%d+" % c) for n in names), [n for n in names if "vtable" in n]
    assert tables["sim"] == tables["ours-host"]
