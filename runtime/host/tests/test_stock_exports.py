"""The entry points stock libomptarget 22 exports beyond what clang-22 emits for plain
target regions, exercised by programs run on sim, ours-host and host-upstream (the oracle).

Each program prints what a user can observe; the expected output is the same on every
backend, except where a separate address space (sim) must refuse host-accessible memory,
which it does with one clear line.
"""
import os
import re
import subprocess

import pytest

from ompsim_base import backends, paths

pytestmark = pytest.mark.e2e

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")
BACKENDS = ["host-upstream", "ours-host", "sim"]


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(name) compiles programs/<name>.c once with `ompsim cc --translate=native`."""
    cache = {}

    def compile_program(name):
        if name not in cache:
            out = tmp_path_factory.mktemp(name)
            exe = str(out / name)
            cmd = [OMPSIM, "cc", "--translate=native", "-O1", "-g",
                   os.path.join(PROGRAMS, name + ".c"), "-o", exe]
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=str(out), timeout=300)
            assert r.returncode == 0, "compile failed: %s\n%s" % (" ".join(cmd), r.stdout)
            cache[name] = exe
        return cache[name]

    return compile_program


def run(exe, backend, *args):
    why = backends.unavailable_reason(backend)
    if why:
        pytest.skip("backend %s unavailable: %s" % (backend, why))
    return subprocess.run([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=backends.environment(backend), timeout=120,
                          cwd=os.path.dirname(exe))


def ompsim_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("ompsim:")]


def check_output(r, expected):
    assert r.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (r.returncode, r.stdout, r.stderr)
    assert ompsim_lines(r.stderr) == [], r.stderr
    assert r.stdout == expected, "stdout:\n%s\nstderr:\n%s" % (r.stdout, r.stderr)


def check_refused(r, printed, names):
    """sim's answer to host-accessible memory: the program sees null, one line says why."""
    assert r.returncode == 3, "exit %d\nstdout:\n%s\nstderr:\n%s" % (r.returncode, r.stdout, r.stderr)
    assert printed in r.stdout, r.stdout
    lines = ompsim_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    assert names in lines[0] and "address space" in lines[0], lines[0]


ASYNC = """\
memcpy_async: failures=0 sum=25163776 expect=25163776
memcpy_async offsets: back[4]=25 back[19]=70 back[3]=0 back[20]=0
memcpy_async null: fails
memcpy_rect_async: failures=0 out[0][0]=203 out[2][3]=406 out[0][4]=0 out[3][0]=0
memcpy_rect_async max dims: INT_MAX
memset_async returns its pointer: yes
memset_async: filled
memset_async zero bytes: no-op
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_copies_run_after_their_depend_objects(build, backend):
    check_output(run(build("async_copy"), backend), ASYNC)


ALLOC_DEVICE = """\
alloc_device: sum=65536 expect=65536
alloc_device on the initial device: host memory
alloc_device of 0 bytes: null
dynamic_shared_alloc on the host: null
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_alloc_device_gives_device_memory(build, backend):
    check_output(run(build("alloc_device"), backend), ALLOC_DEVICE)


@pytest.mark.parametrize("kind", ["host", "shared"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_alloc_host_and_shared_are_host_accessible(build, backend, kind):
    # On sim too: the block is mapped into the host at its device address.
    args = ("shared",) if kind == "shared" else ()
    r = run(build("alloc_host_shared"), backend, *args)
    check_output(r, "alloc_%s: device saw 120, host sees p[5]=-5\n" % kind)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lock_mem_on_shared_memory_or_refused(build, backend):
    r = run(build("lock_mem"), backend)
    if backend == "sim":
        check_refused(r, "lock of 0 bytes: null\nlock_mem: refused\n", "llvm_omp_target_lock_mem")
    else:
        check_output(r, "lock of 0 bytes: null\nlock_mem: same address\n"
                        "lock_mem: buf[0]=10 buf[7]=80\n")


DEVICE_UID = """\
devices whose uid maps back: all
uids distinct: yes
initial device uid: HOST
HOST maps to the initial device: yes
uid of omp_invalid_device: null
device of a null uid: -2
device of an unknown uid: -2
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_device_uids_round_trip(build, backend):
    check_output(run(build("device_uid"), backend), DEVICE_UID)


def sections(text):
    """`text` split at the program's "== name" marker lines: {name: [lines]}."""
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith("== "):
            current = line[3:]
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_info_flag_dump_and_device_info(build, backend):
    r = run(build("info_and_dump"), backend)
    assert r.returncode == 0, r.stderr
    assert ompsim_lines(r.stderr) == [], r.stderr
    err, out = sections(r.stderr), sections(r.stdout)
    assert list(err) == ["transfers shown", "transfers hidden", "end"], r.stderr
    assert list(out) == ["dump", "dump after release", "end"], r.stdout
    dev0 = "omptarget device 0 info: "
    # __tgt_set_info_flag(0x20) shows the copy of `a` (stderr), and (0) hides the copy of `b`.
    assert [l for l in err["transfers shown"]
            if l.startswith(dev0 + "Copying data from host to device") and "Size=16" in l], r.stderr
    assert not [l for l in err["transfers hidden"] if "omptarget" in l], r.stderr
    # ompx_dump_mapping_tables (stdout): device 0 holds a (16 bytes) and b (32 bytes), each
    # with one dynamic reference; after the release its table is empty.
    dump = [l[len(dev0):] for l in out["dump"] if l.startswith(dev0)]
    assert dump[:2] == ["OpenMP Host-Device pointer mappings after block at libomptarget:0:0:",
                        "Host Ptr           Target Ptr         Size (B) DynRefCount HoldRefCount "
                        "Declaration"], r.stdout
    rows = [re.split(r"\s+", l.strip())[2:5] for l in dump[2:]]
    assert sorted(rows) == [["16", "1", "0"], ["32", "1", "0"]], r.stdout
    assert dev0 + "OpenMP Host-Device pointer mappings table empty" in out["dump after release"], \
        r.stdout
    # __tgt_print_device_info prints the device, with the UID omp_get_uid_from_device gives.
    uid = re.search(r"^device uid: (\S+)$", r.stdout, re.M)
    assert uid, r.stdout
    assert "    UID            %s\n" % uid.group(1) in r.stdout, r.stdout
    assert "print_device_info returns 1\n" in r.stdout, r.stdout


LEGACY = """\
region found: yes
return codes: 0 0 0 0 0 0 0 0
x after 1 + 8 launches: 9 9 ... 9
x still mapped: no
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_legacy_launch_entry_points(build, backend):
    check_output(run(build("legacy_launch"), backend), LEGACY)


INTEROP = """\
after init: produced=42
interop object: omp_interop_none
completion callback on none: -6 (omp_irc_other=-6)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_interop_on_a_cpu_device_is_none(build, backend):
    check_output(run(build("interop_none"), backend), INTEROP)


INTEROP_DEPEND = """\
after use: produced=7
after destroy: produced=8
after the region's destroy: a={5,5,5,5}
"""


@pytest.mark.parametrize("backend", ["ours-host", "sim"])
def test_interop_use_and_destroy_wait_for_their_dependences(build, backend):
    # As included tasks do; stock 22 does not wait at destroy (the program's own comment).
    check_output(run(build("interop_depend"), backend), INTEROP_DEPEND)


RUNTIME_CONTROL = """\
region ran: x=1
activate record: 0
replay on the initial device: -1
call configuration: 0 0 grid=4,2,1 block=32 shared=256 stream=same
after more work: x=2
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_control_entry_points(build, backend):
    r = run(build("runtime_control"), backend)
    assert r.returncode == 0, r.stderr
    assert r.stdout == RUNTIME_CONTROL, r.stdout + r.stderr
    # Record-replay is unavailable: stock warns and carries on, and so does ompsim.
    if backend != "host-upstream":
        lines = ompsim_lines(r.stderr)
        assert len(lines) == 1 and "record-replay is not available" in lines[0], r.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_nowait_query_without_a_handle_is_fatal(build, backend):
    r = run(build("runtime_control"), backend, "query")
    assert r.returncode != 0, r.stdout + r.stderr
    assert r.stdout == "querying\n", r.stdout
    if backend != "host-upstream":
        assert r.returncode > 0, "killed by signal %d" % -r.returncode
        lines = ompsim_lines(r.stderr)
        assert len(lines) == 1 and "__tgt_target_nowait_query" in lines[0], r.stderr
