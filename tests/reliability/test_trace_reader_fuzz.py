"""Property test of the Python trace reader (scripts/lib/ompsim_cli/trace.py): for random
bytes and for mutations of real trace lines, read_trace returns events or raises
TraceError naming file:line -- never another exception. Seeded, so reproducible; set
OMPSIM_TRACE_FUZZ_RUNS for a longer run."""
import os
import random

import pytest

from ompsim_cli import trace

VALID = [
    b'{"cat":"image","event":"register","owner":"./prog","images":1,"seq":0}\n',
    b'{"cat":"table","event":"publish","device":0,"n":2,"pid":12,"ts_us":5,"seq":1}\n',
    b'{"cat":"image","event":"fuzz","k":"caf\\u00e9 \\u0092","seq":2}\n',
]
RUNS = int(os.environ.get("OMPSIM_TRACE_FUZZ_RUNS", "3000"))


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(4)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op == 1:
            data[pos:pos] = bytes([rng.choice(b'{}[]":,\\0-9e.\n\xff\xc3 ')])
        elif op == 2 and data:
            del data[pos:pos + rng.randint(1, 4)]
        else:
            data[pos:pos] = rng.choice(VALID)
    return bytes(data)


def test_valid_lines_parse(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(VALID))
    events = trace.read_trace(str(p))
    assert [e.event for e in events] == ["register", "publish", "fuzz"]


@pytest.mark.parametrize("seed", range(3))
def test_random_input_gives_events_or_trace_error(tmp_path, seed):
    rng = random.Random(seed)
    p = tmp_path / "t.jsonl"
    for i in range(RUNS // 3):
        if i % 4 == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
        else:
            data = mutate(rng, b"".join(rng.sample(VALID, rng.randint(1, 3))))
        p.write_bytes(data)
        try:
            trace.read_trace(str(p))
        except trace.TraceError as e:
            assert str(e).startswith(str(p)), e
        except Exception as e:  # noqa: BLE001 - the property under test
            pytest.fail("read_trace raised %s on %r: %s" % (type(e).__name__, data, e))
