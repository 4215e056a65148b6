"""Differential testing of map semantics: seeded random OpenMP C mapping programs,
each compiled once and run on host-upstream (stock libomptarget 22, the oracle),
ours-host and sim; every byte they print must agree.

A program is a sequence of data constructs (target, also as a combined teams
loop, target data with nested constructs, target enter/exit data, target
update, nowait) over scalars, global, stack and heap arrays, a struct with a
pointer and a function-pointer member (also through a declare mapper), an array
of structs, and an array of structs whose pointer members are mapped one by
one, with host-side changes in between. After every step it
prints a checksum of every mapped buffer (pointer members are printed as "still
points where it did", never as addresses, so ASLR cannot make runs differ).

The generator keeps a model of what is present on the device (dynamic and hold
reference counts, as stock libomptarget keeps them) only to write programs that
OpenMP defines: sections never extend a mapped block, `present` only names
present data, data becomes present only through a `to` (so the device copy is
never read uninitialized), and a kernel dereferences the struct's pointer only
when it is attached. A program stock libomptarget itself rejects (non-zero exit)
is counted as skipped, not as a difference.

Usage: scripts/difftest [--minutes N | --count N] [--seed S] [--keep DIR]
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

from ompsim_base import backends, paths

#: The oracle first.
BACKENDS = ("host-upstream", "ours-host", "sim")
OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")

PRELUDE = r"""#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int f_add(int x) { return x + 7; }
int f_mul(int x) { return x * 3 - 1; }
#pragma omp declare target to(f_add, f_mul) indirect

typedef struct { int n; int m; long v[4]; int *data; int (*fn)(int); } S;
typedef struct { int a; long b; } T;
typedef struct { int k; int *q; } P;
#pragma omp declare mapper(sm: S s) map(s, s.data[0:s.m])

static unsigned long long mix(unsigned long long h, long long v) {
  return (h ^ (unsigned long long)v) * 1099511628211ULL;
}
static unsigned long long cks_int(const int *p, int n) {
  unsigned long long h = 1469598103934665603ULL;
  for (int i = 0; i < n; ++i) h = mix(h, p[i]);
  return h;
}
static unsigned long long cks_long(const long *p, int n) {
  unsigned long long h = 1469598103934665603ULL;
  for (int i = 0; i < n; ++i) h = mix(h, p[i]);
  return h;
}
static unsigned long long cks_double(const double *p, int n) {
  unsigned long long h = 1469598103934665603ULL;
  for (int i = 0; i < n; ++i) h = mix(h, (long long)(p[i] * 1024.0));
  return h;
}
static unsigned long long cks_pa(const P *p, int *const *q, int n, int m) {
  unsigned long long h = 1469598103934665603ULL;
  for (int k = 0; k < n; ++k) {
    h = mix(h, p[k].k);
    for (int i = 0; i < m; ++i) h = mix(h, q[k][i]);
  }
  return h;
}
static int same_q(const P *p, int *const *q, int n) {
  for (int k = 0; k < n; ++k)
    if (p[k].q != q[k]) return 0;
  return 1;
}
static unsigned long long cks_T(const T *p, int n) {
  unsigned long long h = 1469598103934665603ULL;
  for (int i = 0; i < n; ++i) h = mix(mix(h, p[i].a), p[i].b);
  return h;
}
"""

CTYPES = ("int", "long", "double")


class Var:
    """One mappable object and what the model knows of its device copy."""

    def __init__(self, name, kind, n, ctype="int"):
        self.name, self.kind, self.n, self.ctype = name, kind, n, ctype
        self.lo = self.hi = None  # present block, element indices
        self.dyn = self.hold = 0

    @property
    def present(self):
        return self.dyn > 0 or self.hold > 0

    def whole_only(self):
        return self.kind in ("scalar", "struct")

    def ref(self, lo, hi):
        """The clause list item for elements [lo, hi)."""
        if self.whole_only():
            return self.name
        if lo == 0 and hi == self.n and self.kind in ("global", "stack", "aos"):
            return self.name
        return "%s[%d:%d]" % (self.name, lo, hi - lo)


class Generator:
    """Writes one program from a seed."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
        self.lines = []
        self.indent = 1
        self.step = 0
        self.vars = []
        self.attached = False  # device s.data points at the device pointee
        self.shadowed = False  # the struct's present block has had s.data attached

    # -- helpers -------------------------------------------------------------
    def emit(self, text):
        self.lines.append("  " * self.indent + text)

    def const(self):
        return self.rng.randint(1, 9)

    def pick_section(self, v):
        """A section of `v` that a construct may map: inside the present
        block, or anything when `v` is not present."""
        if v.whole_only():
            return 0, v.n
        lo_bound, hi_bound = (v.lo, v.hi) if v.present else (0, v.n)
        if self.rng.random() < 0.35:
            return lo_bound, hi_bound
        lo = self.rng.randint(lo_bound, hi_bound - 1)
        hi = self.rng.randint(lo + 1, hi_bound)
        return lo, hi

    def mappable(self):
        return [v for v in self.vars if v.kind != "pointee"] + [self.pointee]

    # -- the model -------------------------------------------------------------
    def acquire(self, v, lo, hi, hold=False):
        """A map-entering item: returns True when it creates the block."""
        new = not v.present
        if new:
            v.lo, v.hi = lo, hi
        if hold:
            v.hold += 1
        else:
            v.dyn += 1
        return new

    def release(self, v, hold=False, delete=False):
        """A map-exiting item: returns True when this release is the last."""
        if not v.present:
            return False
        if delete:
            v.dyn = 0
        elif hold:
            v.hold = max(0, v.hold - 1)
        else:
            v.dyn = max(0, v.dyn - 1)
        if not v.present:
            v.lo = v.hi = None
            if v is self.pointee or v is self.struct:
                self.attached = False
            if v is self.struct:
                self.shadowed = False
            return True
        return False

    # -- constructs ------------------------------------------------------------
    def mapper_ok(self):
        """The struct's declare mapper maps s.data[0:m]: only when that cannot
        extend a present block, and the pointer ends up attached."""
        p = self.pointee
        # A present struct is copied again through its mapper when its count
        # is 1 and it holds no attached pointer (stock, and ompsim with it:
        # docs/mapping.md), so every struct state is generated.
        return (not p.present) or (p.lo == 0 and p.hi == p.n and self.attached)

    def map_item(self, v, entering_new_ok=True):
        """(kind, modifiers, var, lo, hi) for one item of a map-entering construct."""
        if v is self.struct and self.mapper_ok() and self.rng.random() < 0.3:
            return self.rng.choice(["to", "tofrom"]), ["mapper(sm)"], v, 0, v.n
        lo, hi = self.pick_section(v)
        if not v.present:
            kind = self.rng.choice(["to", "tofrom"])
            mods = []
        else:
            kind = self.rng.choice(["to", "from", "tofrom", "alloc"])
            mods = []
            # Stock skips an `always, to` copy of a block that holds an
            # attached pointer (it takes it for a second new mapping), where
            # ompsim copies as OpenMP says: leave that case out.
            always_ok = not (v is self.struct and self.shadowed)
            if kind != "alloc" and always_ok and self.rng.random() < 0.25:
                mods.append("always")
            if self.rng.random() < 0.2:
                mods.append("present")
        return kind, mods, v, lo, hi

    def clause(self, items, hold=False):
        groups = {}
        for kind, mods, v, lo, hi in items:
            key = ", ".join((["ompx_hold"] if hold else []) + mods + [kind])
            groups.setdefault(key, []).append(v.ref(lo, hi))
        return " ".join("map(%s: %s)" % (k, ", ".join(refs)) for k, refs in groups.items())

    def choose_items(self, lo_count=1, hi_count=3):
        pool = [v for v in self.mappable()]
        self.rng.shuffle(pool)
        chosen = pool[: self.rng.randint(lo_count, min(hi_count, len(pool)))]
        # The struct's pointee goes with the struct in a kernel (see attach()).
        return chosen

    def kernel_body(self, items):
        """Statements changing every mapped element, reading only what the
        device holds."""
        body = []
        for kind, mods, v, lo, hi in items:
            c = self.const()
            if v.kind == "scalar":
                body.append("%s = (%s * 3 + %d) %% 1000003;" % (v.name, v.name, c))
            elif v.kind == "struct":
                body.append("%s.n += %d;" % (v.name, c))
                body.append("for (int j = 0; j < 4; ++j) %s.v[j] = %s.v[j] * 2 + %s.fn(j);" % (
                    v.name, v.name, v.name))
                if "mapper(sm)" in mods:
                    body.append("for (int i = 0; i < %d; ++i) %s.data[i] += %s.fn(i) + %d;" % (
                        self.pointee.n, v.name, v.name, c))
            elif v.kind == "pointee":
                if not self.attached:
                    continue  # the device s.data may not point at the device pointee
                body.append("for (int i = %d; i < %d; ++i) %s.data[i] += %s.fn(i) + %d;" % (
                    lo, hi, self.struct.name, self.struct.name, c))
            elif v.kind == "aos":
                body.append("for (int i = %d; i < %d; ++i) { %s[i].a += %d; %s[i].b = %s[i].b * 2 + i; }" % (
                    lo, hi, v.name, c, v.name, v.name))
            else:
                expr = "(%s[i] * 3 + %d) %% 1000003" % (v.name, c) if v.ctype != "double" else \
                    "%s[i] * 0.5 + %d" % (v.name, c)
                body.append("for (int i = %d; i < %d; ++i) %s[i] = %s;" % (lo, hi, v.name, expr))
        return body

    def note_attach(self, items, created):
        """Stock attaches s.data when a construct maps a section of it, both
        the struct and the pointee are present, and one of them is new."""
        has_pointee = any(v is self.pointee for _, _, v, _, _ in items)
        if has_pointee and self.struct.present and self.pointee.present and (
                created.get(self.struct.name) or created.get(self.pointee.name)):
            self.attached = self.shadowed = True
        if created.get(self.struct.name) and not has_pointee:
            self.attached = False  # a fresh device struct holds the host pointer

    def enter_items(self, items, hold=False):
        created = {}
        for kind, mods, v, lo, hi in items:
            if "mapper(sm)" in mods:
                # Stock neither counts nor releases a mapper's first component
                # (the struct): a new struct stays mapped. The pointee is
                # counted and attached at once (PTR_AND_OBJ).
                if not v.present:
                    v.lo, v.hi = 0, v.n
                    if hold:
                        v.hold = 1
                    else:
                        v.dyn = 1
                self.acquire(self.pointee, 0, self.pointee.n, hold=hold)
                self.attached = self.shadowed = True
                continue
            created[v.name] = self.acquire(v, lo, hi, hold=hold)
        self.note_attach(items, created)

    def exit_items(self, items, hold=False):
        for kind, mods, v, lo, hi in reversed(items):
            if "mapper(sm)" in mods:
                self.release(self.pointee, hold=hold)
                continue
            self.release(v, hold=hold)

    def valid_items(self, items):
        """Drops items a construct may not list together (one block per
        variable: a second section of the same variable would extend it)."""
        seen, out = set(), []
        # The struct's mapper maps the pointee itself.
        if any("mapper(sm)" in it[1] for it in items):
            seen.add(self.pointee.name)
        for it in items:
            if it[2].name in seen:
                continue
            seen.add(it[2].name)
            out.append(it)
        return out

    def op_target(self):
        items = self.valid_items([self.map_item(v) for v in self.choose_items()])
        # The pointee's kernel code needs the struct mapped in the same construct.
        if any(it[2] is self.pointee for it in items) and not any(it[2] is self.struct for it in items):
            items = self.valid_items(items + [self.map_item(self.struct)])
        # A zero-length section of a present heap array: the kernel reaches
        # the whole present block through it.
        zero = [v for v in self.vars if v.kind == "heap" and v.present and
                all(it[2] is not v for it in items)]
        zero = zero[:1] if zero and self.rng.random() < 0.4 else []
        nowait = self.rng.random() < 0.2
        clause = self.clause(items) + "".join(" map(tofrom: %s[0:0])" % v.name for v in zero)
        loop_only = len(items) == 1 and not zero and items[0][2].kind in ("global", "stack", "heap")
        if loop_only and self.rng.random() < 0.5:
            # A combined construct: the loop runs over teams and threads.
            self.emit("#pragma omp target teams distribute parallel for %s%s" % (
                clause, " nowait" if nowait else ""))
            self.enter_items(items)
            self.emit(self.kernel_body(items)[0])
            if nowait:
                self.emit("#pragma omp taskwait")
            self.exit_items(items)
            return
        self.emit("#pragma omp target %s%s" % (clause, " nowait" if nowait else ""))
        self.enter_items(items)
        body = self.kernel_body(items + [("tofrom", [], v, v.lo, v.hi) for v in zero])
        self.emit("{")
        for b in body:
            self.emit("  " + b)
        self.emit("}")
        if nowait:
            self.emit("#pragma omp taskwait")
        self.exit_items(items)

    def op_target_data(self, depth):
        items = self.valid_items([self.map_item(v) for v in self.choose_items()])
        hold = self.rng.random() < 0.15
        self.emit("#pragma omp target data %s" % self.clause(items, hold=hold))
        self.emit("{")
        self.indent += 1
        self.enter_items(items, hold=hold)
        for _ in range(self.rng.randint(1, 3)):
            self.op(depth + 1)
        self.indent -= 1
        self.emit("}")
        self.exit_items(items, hold=hold)

    def op_enter(self):
        items = self.valid_items([self.map_item(v) for v in self.choose_items()])
        items = [(k if k in ("to", "alloc") else "to", [m for m in mods if m != "present" or v.present],
                  v, lo, hi) for k, mods, v, lo, hi in items]
        # `alloc` would leave a new block uninitialized.
        items = [("to" if not v.present else k, mods, v, lo, hi) for k, mods, v, lo, hi in items]
        nowait = self.rng.random() < 0.15
        self.emit("#pragma omp target enter data %s%s" % (self.clause(items), " nowait" if nowait else ""))
        if nowait:
            self.emit("#pragma omp taskwait")
        self.enter_items(items)

    def op_exit(self):
        present = [v for v in self.mappable() if v.present]
        if not present:
            return self.op_enter()
        self.rng.shuffle(present)
        items = []
        for v in present[: self.rng.randint(1, len(present))]:
            lo, hi = self.pick_section(v)
            kind = self.rng.choice(["from", "from", "release", "delete"])
            mods = ["always"] if kind == "from" and self.rng.random() < 0.25 else []
            items.append((kind, mods, v, lo, hi))
        self.emit("#pragma omp target exit data %s" % self.clause(items))
        for kind, mods, v, lo, hi in reversed(items):
            self.release(v, delete=(kind == "delete"))

    def op_update(self):
        v = self.rng.choice(self.mappable())
        lo, hi = self.pick_section(v)
        motion = self.rng.choice(["to", "from"])
        ref = v.ref(lo, hi)
        # A strided section of an array (stock moves those right from element 0).
        if v.kind in ("global", "stack", "heap") and v.present and v.lo == 0 and self.rng.random() < 0.3:
            stride = self.rng.randint(2, 3)
            count = max(1, (v.hi - 1) // stride + 1)
            ref = "%s[0:%d:%d]" % (v.name, count, stride)
        mods = "present: " if v.present and self.rng.random() < 0.2 else ""
        if v is self.struct and self.rng.random() < 0.5:
            mods = "mapper(sm): "  # the struct and the whole pointee, where present
        self.emit("#pragma omp target update %s(%s%s)" % (motion, mods, ref))

    def op_host(self):
        v = self.rng.choice(self.vars + [self.pointee])
        c = self.const()
        if v.kind == "pointee":
            self.emit("for (int i = 0; i < %d; ++i) s_data[i] += %d;" % (v.n, c))
        elif v.kind == "scalar":
            self.emit("%s += %d;" % (v.name, c))
        elif v.kind == "struct":
            self.emit("%s.n += %d; %s.v[%d] += %d;" % (v.name, c, v.name, self.rng.randint(0, 3), c))
        elif v.kind == "aos":
            self.emit("for (int i = 0; i < %d; ++i) %s[i].a -= %d;" % (v.n, v.name, c))
        else:
            self.emit("for (int i = 0; i < %d; ++i) %s[i] += %d;" % (v.n, v.name, c))

    def op_pointer_array(self):
        """An array of structs whose pointer members are mapped one by one
        and attached, used in a kernel and unmapped again (nothing of `pa`
        is present before or after)."""
        n, m = self.pa_n, self.pa_m
        lo = self.rng.randint(0, n - 1)
        hi = self.rng.randint(lo + 1, n)
        c = self.const()
        whole = self.rng.random() < 0.5
        self.emit("#pragma omp target enter data map(to: %s)" % ("pa" if whole else "pa[%d:%d]" % (lo, hi - lo)))
        self.emit("for (int k = %d; k < %d; ++k) {" % (lo, hi))
        self.emit("  #pragma omp target enter data map(to: pa[k].q[0:%d])" % m)
        self.emit("}")
        self.emit("#pragma omp target map(present, alloc: pa[%d:%d])" % (lo, hi - lo))
        self.emit("for (int k = %d; k < %d; ++k) for (int i = 0; i < %d; ++i) pa[k].q[i] += pa[k].k * i + %d;" % (
            lo, hi, m, c))
        motion = self.rng.choice(["from", "release"])
        self.emit("for (int k = %d; k < %d; ++k) {" % (lo, hi))
        self.emit("  #pragma omp target exit data map(%s: pa[k].q[0:%d])" % (motion, m))
        self.emit("}")
        self.emit("#pragma omp target exit data map(%s: %s)" % (
            self.rng.choice(["from", "release", "delete"]), "pa" if whole else "pa[%d:%d]" % (lo, hi - lo)))

    def op(self, depth=0):
        choices = ["target"] * 4 + ["enter"] * 2 + ["exit"] * 2 + ["update"] * 2 + ["host"] * 2
        if depth == 0:
            choices.append("pointer_array")
        if depth < 2:
            choices += ["data"] * 2
        what = self.rng.choice(choices)
        if what == "target":
            self.op_target()
        elif what == "data":
            self.op_target_data(depth)
        elif what == "enter":
            self.op_enter()
        elif what == "exit":
            self.op_exit()
        elif what == "update":
            self.op_update()
        elif what == "pointer_array":
            self.op_pointer_array()
        else:
            self.op_host()
        self.checksums()

    def checksums(self):
        self.step += 1
        parts, args = [], []
        for v in self.vars:
            if v.kind == "scalar":
                parts.append("%s=%%d" % v.name)
                args.append(v.name)
            elif v.kind == "struct":
                parts.append("%s=%%d,%%llu,%%d,%%d" % v.name)
                args += ["%s.n" % v.name, "cks_long(%s.v, 4)" % v.name,
                         "%s.data == %s_data" % (v.name, v.name), "%s.fn == f_mul" % v.name]
            elif v.kind == "pointee":
                continue
            elif v.kind == "aos":
                parts.append("%s=%%llu" % v.name)
                args.append("cks_T(%s, %d)" % (v.name, v.n))
            else:
                parts.append("%s=%%llu" % v.name)
                args.append("cks_%s(%s, %d)" % (v.ctype, v.name, v.n))
        parts.append("%s=%%llu" % self.pointee.name.replace(".", "_"))
        args.append("cks_int(%s_data, %d)" % (self.struct.name, self.pointee.n))
        parts.append("pa=%llu,%d")
        args.append("cks_pa(pa, pa_q, %d, %d)" % (self.pa_n, self.pa_m))
        args.append("same_q(pa, pa_q, %d)" % self.pa_n)
        self.emit('printf("%d %s\\n", %s);' % (self.step, " ".join(parts), ", ".join(args)))

    # -- the program -----------------------------------------------------------
    def program(self):
        rng = self.rng
        globals_, decls = [], []
        for k in range(rng.randint(1, 2)):
            v = Var("g%d" % k, "global", rng.randint(4, 12), rng.choice(CTYPES))
            globals_.append("%s %s[%d];" % (v.ctype, v.name, v.n))
            decls.append("for (int i = 0; i < %d; ++i) %s[i] = i * %d + 1;" % (v.n, v.name, k + 2))
            self.vars.append(v)
        for k in range(rng.randint(1, 2)):
            v = Var("a%d" % k, "stack", rng.randint(4, 12), rng.choice(CTYPES))
            decls.append("%s %s[%d];" % (v.ctype, v.name, v.n))
            decls.append("for (int i = 0; i < %d; ++i) %s[i] = %d - i;" % (v.n, v.name, 50 + k))
            self.vars.append(v)
        for k in range(rng.randint(1, 2)):
            v = Var("h%d" % k, "heap", rng.randint(4, 16), rng.choice(CTYPES))
            decls.append("%s *%s = malloc(%d * sizeof(%s));" % (v.ctype, v.name, v.n, v.ctype))
            decls.append("for (int i = 0; i < %d; ++i) %s[i] = i * i + %d;" % (v.n, v.name, k))
            self.vars.append(v)
        x = Var("x", "scalar", 1)
        decls.append("int x = %d;" % rng.randint(1, 100))
        self.vars.append(x)
        m = rng.randint(3, 10)
        self.struct = Var("s", "struct", 1)
        decls.append("int *s_data = malloc(%d * sizeof(int));" % m)
        decls.append("for (int i = 0; i < %d; ++i) s_data[i] = 3 * i;" % m)
        decls.append("S s = {%d, %d, {1, 2, 3, 4}, s_data, f_mul};" % (m, m))
        self.vars.append(self.struct)
        self.pointee = Var("s.data", "pointee", m)
        self.pa_n, self.pa_m = rng.randint(2, 5), rng.randint(2, 6)
        decls.append("P pa[%d];" % self.pa_n)
        decls.append("int *pa_q[%d];" % self.pa_n)
        decls.append("for (int k = 0; k < %d; ++k) { pa[k].k = k + 1; pa[k].q = pa_q[k] = malloc(%d * sizeof(int)); "
                     "for (int i = 0; i < %d; ++i) pa[k].q[i] = k * 10 + i; }" % (self.pa_n, self.pa_m, self.pa_m))
        aos = Var("t", "aos", rng.randint(2, 6))
        decls.append("T t[%d];" % aos.n)
        decls.append("for (int i = 0; i < %d; ++i) { t[i].a = i; t[i].b = 10 * i; }" % aos.n)
        self.vars.append(aos)

        for _ in range(rng.randint(5, 12)):
            self.op()
        body = self.lines
        out = ["/* ompsim difftest, seed %d */" % self.seed, PRELUDE]
        out += globals_
        out += ["", "int main(void) {"]
        out += ["  " + d for d in decls]
        out += body
        out += ["  return 0;", "}", ""]
        return "\n".join(out)


def generate(seed):
    """The C source of the program for `seed`."""
    return Generator(seed).program()


class Outcome:
    """One program's result: 'same', 'differs' or 'skipped' (stock rejected it)."""

    def __init__(self, seed, status, source, runs, detail=""):
        self.seed, self.status, self.source, self.runs, self.detail = seed, status, source, runs, detail

    def report(self):
        lines = ["seed %d: %s %s" % (self.seed, self.status, self.detail)]
        for backend, (rc, out, err) in self.runs.items():
            lines.append("--- %s: exit %d\n%s%s" % (backend, rc, out, err))
        lines.append("--- program (seed %d)\n%s" % (self.seed, self.source))
        return "\n".join(lines)


def run_seed(seed, workdir, timeout=120):
    """Generates, compiles once, runs on every backend and compares."""
    source = generate(seed)
    src = os.path.join(workdir, "diff_%d.c" % seed)
    exe = os.path.join(workdir, "diff_%d" % seed)
    with open(src, "w") as f:
        f.write(source)
    r = subprocess.run([OMPSIM, "cc", "-O1", src, "-o", exe], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    if r.returncode != 0:
        return Outcome(seed, "differs", source, {}, "(does not compile)\n" + r.stdout)
    runs = {}
    for backend in BACKENDS:
        why = backends.unavailable_reason(backend)
        if why:
            raise RuntimeError("backend %s unavailable: %s" % (backend, why))
        env = backends.environment(backend)
        try:
            p = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, timeout=timeout, cwd=workdir)
            runs[backend] = (p.returncode, p.stdout, p.stderr)
        except subprocess.TimeoutExpired:
            runs[backend] = (-1, "", "timed out after %d s\n" % timeout)
    oracle = runs[BACKENDS[0]]
    if oracle[0] != 0:
        # Not a program OpenMP defines (or a stock failure): not compared.
        first = (oracle[2].strip().splitlines() or [""])[-1][:200]
        return Outcome(seed, "skipped", source, runs, "(stock exits %d: %s; %s)" % (
            oracle[0], first, ", ".join("%s exits %d" % (b, runs[b][0]) for b in BACKENDS[1:])))
    for backend in BACKENDS[1:]:
        rc, out, err = runs[backend]
        if rc != oracle[0] or out != oracle[1]:
            return Outcome(seed, "differs", source, runs, "(%s differs from %s)" % (backend, BACKENDS[0]))
    for path in (src, exe):
        os.unlink(path)
    return Outcome(seed, "same", source, runs)


def main(argv=None):
    p = argparse.ArgumentParser(prog="difftest", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, help="run new seeds for this long")
    p.add_argument("--count", type=int, help="run this many seeds (default 20 without --minutes)")
    p.add_argument("--seed", type=int, default=None, help="first seed (default: from the clock)")
    p.add_argument("--keep", metavar="DIR", help="write differing programs here")
    p.add_argument("--print", dest="show", type=int, metavar="SEED", help="print the program of SEED and exit")
    args = p.parse_args(argv)
    if args.show is not None:
        sys.stdout.write(generate(args.show))
        return 0
    seed = args.seed if args.seed is not None else int(time.time()) % 1000000 * 1000
    count = args.count if args.count is not None else (None if args.minutes else 20)
    deadline = time.time() + args.minutes * 60 if args.minutes else None
    tried = same = 0
    failures, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="ompsim-difftest-") as work:
        while (count is None or tried < count) and (deadline is None or time.time() < deadline):
            o = run_seed(seed, work)
            tried += 1
            if o.status == "same":
                same += 1
            elif o.status == "skipped":
                skipped.append(o.seed)
                print("seed %d: skipped %s" % (o.seed, o.detail), flush=True)
            else:
                failures.append(o)
                print(o.report(), flush=True)
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    with open(os.path.join(args.keep, "diff_%d.c" % seed), "w") as f:
                        f.write(o.source)
            seed += 1
    print("difftest: %d programs tried (seeds %d..%d), %d same on every backend, %d skipped (stock "
          "rejects them%s), %d differ%s" % (
              tried, seed - tried, seed - 1, same, len(skipped),
              ": seeds " + " ".join(map(str, skipped)) if skipped else "", len(failures),
              "" if not failures else ": seeds " + " ".join(str(o.seed) for o in failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
