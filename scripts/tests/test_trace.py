"""`ompsim trace show` / `ompsim trace diff` on synthetic JSON-lines traces."""
import json
import os
import subprocess

import pytest

from ompsim_base import paths

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")


def event(cat, name, *fields, seq, normalized=True):
    """One trace line as runtime/trace/Trace.cpp writes it (fields in order, envelope last)."""
    body = ['"cat":%s' % json.dumps(cat), '"event":%s' % json.dumps(name)]
    body += ["%s:%s" % (json.dumps(k), json.dumps(v)) for k, v in fields]
    if not normalized:
        body += ['"pid":%d' % (4242 + seq), '"ts_us":%d' % (1700000000000000 + seq)]
    body.append('"seq":%d' % seq)
    return "{" + ",".join(body) + "}\n"


def canonical_events(mul2_device="0x200000001010", with_done=True, extra_translate=False):
    evs = [
        ("image", "plugin", ("name", "sim"), ("devices", 1), ("set_function_ptr_map", 1)),
        ("entry", "indirect", ("name", "__omp_offloading_fe00_1_add1_l2"), ("host", "host:add1+0x0"),
         ("device", "dev:add1+0x0 (0x200000001000)"), ("size", 8)),
        ("entry", "indirect", ("name", "__omp_offloading_fe00_1_mul2_l3"), ("host", "host:mul2+0x0"),
         ("device", "dev:mul2+0x0 (%s)" % mul2_device), ("size", 8)),
        ("table", "pair", ("device", 0), ("host", "host:add1+0x0"), ("device_ptr", "dev:add1+0x0 (0x200000001000)")),
        ("table", "pair", ("device", 0), ("host", "host:mul2+0x0"), ("device_ptr", "dev:mul2+0x0 (%s)" % mul2_device)),
        ("table", "publish", ("device", 0), ("n", 2), ("via", "set_function_ptr_map")),
        ("launch", "launch", ("device", 0), ("kernel", "__omp_offloading_fe00_1_main_l8"), ("args", 2)),
    ]
    if extra_translate:
        evs.append(("translate", "translate", ("device", 0), ("kernel", "__omp_offloading_fe00_1_main_l8"),
                    ("host_ptr", "host:add10+0x0"), ("result", "dev:0x55aa00001000"), ("outcome", "miss")))
    if with_done:
        evs.append(("launch", "done", ("device", 0), ("kernel", "__omp_offloading_fe00_1_main_l8")))
    return evs


def write_trace(path, events, normalized=True):
    path.write_text("".join(event(c, n, *f, seq=i, normalized=normalized) for i, (c, n, *f) in enumerate(events)))
    return path


def ompsim(*args):
    return subprocess.run([OMPSIM, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=60)


@pytest.fixture
def trace(tmp_path):
    return write_trace(tmp_path / "a.jsonl", canonical_events())


def test_show_prints_every_event_and_the_table(trace):
    r = ompsim("trace", "show", trace)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(l.split()[:3] == ["0", "image", "plugin"] for l in lines), r.stdout
    # The two pair events become one aligned table with a header row.
    title = [i for i, l in enumerate(lines) if "function-pointer table, device 0: 2 pairs" in l]
    assert len(title) == 1, r.stdout
    header, row0, row1 = lines[title[0] + 1: title[0] + 4]
    assert header.split() == ["#", "host", "device_ptr"]
    assert row0.split()[:2] == ["0", "host:add1+0x0"] and row1.split()[:2] == ["1", "host:mul2+0x0"]
    assert header.index("device_ptr") == row0.index("dev:add1") == row1.index("dev:mul2")
    assert not any(" pair " in l for l in lines)
    assert any(l.split()[1:3] == ["table", "publish"] and "n=2" in l for l in lines)


def test_show_flat_keeps_pairs_as_events(trace):
    r = ompsim("trace", "show", "--flat", trace)
    assert r.returncode == 0
    assert sum(1 for l in r.stdout.splitlines() if l.split()[1:3] == ["table", "pair"]) == 2


def test_show_filters_by_category(trace):
    r = ompsim("trace", "show", "--cat", "launch,image", trace)
    assert r.returncode == 0, r.stderr
    assert [l.split()[1] for l in r.stdout.splitlines()] == ["image", "launch", "launch"]


def test_show_filters_by_function(tmp_path):
    path = write_trace(tmp_path / "t.jsonl", canonical_events(extra_translate=True))
    r = ompsim("trace", "show", "--function", "add1", "--flat", path)
    assert r.returncode == 0, r.stderr
    shown = r.stdout.splitlines()
    # add1 in a symbol (host:add1+0x0) or an entry name (..._add1_l2), but not add10.
    assert len(shown) == 2, r.stdout
    assert all("add1" in l for l in shown) and not any("add10" in l for l in shown)
    r = ompsim("trace", "show", "--function", "mul2", path)
    assert "function-pointer table, device 0: 1 pair" in r.stdout
    assert "host:mul2+0x0" in r.stdout and "host:add1+0x0" not in r.stdout


def test_show_unknown_category_is_one_line(trace):
    r = ompsim("trace", "show", "--cat", "tabel", trace)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]
    assert "unknown trace category 'tabel'" in r.stderr


def test_show_accepts_unnormalized_traces_and_event_fields_named_pid(tmp_path):
    path = write_trace(tmp_path / "raw.jsonl", canonical_events(), normalized=False)
    with open(path, "a") as f:
        f.write(event("image", "executor-start", ("device", 0), ("pid", 777), seq=99, normalized=False))
    r = ompsim("trace", "show", "--cat", "image", path)
    assert r.returncode == 0, r.stderr
    last = r.stdout.splitlines()[-1]
    assert last.split()[:3] == ["99", "image", "executor-start"] and "pid=777" in last
    assert "ts_us" not in r.stdout


@pytest.mark.parametrize("text, problem", [
    ('{"cat":"table","event":"pair"\n', "Expecting ',' delimiter"),
    ('[1, 2]\n', "expected a JSON object"),
    ('{"event":"pair","cat":"table","seq":0}\n', 'starts with "cat" and "event"'),
    ('{"cat":"table","event":"pair","device":0}\n', 'no "seq"'),
    ('{"cat":7,"event":"pair","seq":0}\n', "must be strings"),
    ("[ompsim table] pair device=0\n", "human-format trace"),
])
def test_malformed_line_names_file_and_line(tmp_path, text, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text(event("image", "plugin", ("name", "sim"), seq=0) + "\n" + text)
    for cmd in (["trace", "show", path], ["trace", "diff", path, path]):
        r = ompsim(*cmd)
        assert r.returncode == 2, r
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith("ompsim: %s:3: malformed trace line: " % path), r.stderr
        assert problem in lines[0]


def test_missing_file(tmp_path):
    r = ompsim("trace", "show", tmp_path / "none.jsonl")
    assert r.returncode == 2
    assert r.stderr.strip() == "ompsim: %s: cannot read: No such file or directory" % (tmp_path / "none.jsonl")


def test_diff_of_identical_traces_is_clean(tmp_path):
    a = write_trace(tmp_path / "a.jsonl", canonical_events())
    b = write_trace(tmp_path / "b.jsonl", canonical_events())
    r = ompsim("trace", "diff", a, b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "equivalent" in r.stdout


def test_diff_ignores_envelope(tmp_path):
    """pid, ts_us and seq differ from run to run; the events themselves do not."""
    a = write_trace(tmp_path / "a.jsonl", canonical_events(), normalized=False)
    lines = a.read_text().splitlines(keepends=True)
    b = tmp_path / "b.jsonl"
    b.write_text("".join(l.replace('"pid":', '"pid":1').replace('"seq":', '"seq":10') for l in lines))
    r = ompsim("trace", "diff", a, b)
    assert r.returncode == 0, r.stdout
    assert r.stderr == ""
    # --raw compares as written, and says the traces are not normalized.
    r = ompsim("trace", "diff", "--raw", a, b)
    assert r.returncode == 0, r.stdout
    assert "not normalized" in r.stderr


def test_diff_compares_symbolized_host_addresses_not_raw_values(tmp_path):
    """A raw trace (host addresses with their ASLR value, pids) and a normalized one of
    the same program compare equal by default; --raw reports the raw differences."""
    raw = [(c, e) + tuple((k, v.replace("host:add1+0x0", "host:add1+0x0 (0x55d0c4a01190)")
                           .replace("host:mul2+0x0", "host:mul2+0x0 (0x55d0c4a011a0)")
                           if isinstance(v, str) else v) for k, v in fields)
           for c, e, *fields in canonical_events()]
    raw.append(("image", "executor-start", ("device", 0), ("pid", 31337)))
    norm = canonical_events() + [("image", "executor-start", ("device", 0), ("pid", 4242))]
    a = write_trace(tmp_path / "raw.jsonl", raw, normalized=False)
    b = write_trace(tmp_path / "norm.jsonl", norm)
    r = ompsim("trace", "diff", a, b)
    assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
    assert "traces are equivalent" in r.stdout
    r = ompsim("trace", "diff", "--raw", a, b)
    assert r.returncode == 1
    assert "0x55d0c4a01190" in r.stdout and "31337" in r.stdout
    # A symbol that differs is still a difference.
    c = write_trace(tmp_path / "other.jsonl", [ev if ev[1] != "pair" else ev[:3] + (("host", "host:add2+0x0"),) +
                                               ev[4:] for ev in norm])
    r = ompsim("trace", "diff", a, c)
    assert r.returncode == 1 and "host:add2+0x0" in r.stdout, r.stdout



def test_diff_reports_changed_added_removed(tmp_path):
    a = write_trace(tmp_path / "a.jsonl", canonical_events())
    b = write_trace(tmp_path / "b.jsonl",
                    canonical_events(mul2_device="0x200000001020", with_done=False, extra_translate=True))
    r = ompsim("trace", "diff", a, b)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout.splitlines()
    changed = [l for l in out if l.startswith("~ ")]
    # The mul2 device address moved: its entry and its table pair changed, nothing else.
    assert len(changed) == 2, r.stdout
    assert any("entry indirect: device: dev:mul2+0x0 (0x200000001010) -> dev:mul2+0x0 (0x200000001020)" in l
               for l in changed)
    assert any("table pair: device_ptr:" in l for l in changed)
    assert [l for l in out if l.startswith("- ")] == ["- %s:8: launch done device=0 kernel=__omp_offloading_fe00_1_main_l8" % a]
    added = [l for l in out if l.startswith("+ ")]
    assert len(added) == 1 and "translate translate" in added[0] and added[0].startswith("+ %s:8:" % b)
    assert out[-1] == "1 removed, 1 added, 2 changed"


def test_diff_aligns_by_identity_not_position(tmp_path):
    """An extra pair early in B is one addition, not a cascade of changes."""
    evs = canonical_events()
    extra = ("table", "pair", ("device", 0), ("host", "host:aaa+0x0"), ("device_ptr", "dev:aaa+0x0 (0x200000000f00)"))
    a = write_trace(tmp_path / "a.jsonl", evs)
    b = write_trace(tmp_path / "b.jsonl", evs[:3] + [extra] + evs[3:])
    r = ompsim("trace", "diff", a, b)
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1] == "0 removed, 1 added, 0 changed"
    assert "host=host:aaa+0x0" in r.stdout


def test_diff_ignore_field(tmp_path):
    a = write_trace(tmp_path / "a.jsonl", canonical_events())
    b = write_trace(tmp_path / "b.jsonl", canonical_events(mul2_device="0x200000001020"))
    assert ompsim("trace", "diff", a, b).returncode == 1
    r = ompsim("trace", "diff", "--ignore", "device", "--ignore", "device_ptr", a, b)
    assert r.returncode == 0, r.stdout
