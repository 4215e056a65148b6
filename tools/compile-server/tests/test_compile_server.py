"""The compile server (docs/compile-server.md): LLVM tools run as forks of a started copy
give what a process of their own gives (outputs, messages, statuses, files), and nothing
outlives what started it.

Each test starts its own servers in a folder of its own, and compares with the same command
run directly.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ompsim_base import compile_server, paths, toolchain

pytestmark = pytest.mark.skipif(
    not (os.path.exists(paths.COMPILE_SERVER_LIBRARY) and os.path.exists(paths.COMPILE_CLIENT)),
    reason="the compile server is not built in %s" % paths.BUILD)

CLANG = toolchain.tool("clang")
OFFLOAD = ["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-fuse-ld=lld"]

PROGRAM = textwrap.dedent(r"""
    #include <stdio.h>
    int twice(int x) { return 2 * x; }
    #pragma omp declare target to(twice) indirect
    int main(void) {
      int (*fp)(int) = twice;
      int r = 0;
    #pragma omp target map(from: r)
      r = 21;
      printf("%d %d\n", r, fp(4));
      return 0;
    }
    """)


@pytest.fixture
def servers():
    s = compile_server.Servers.start(toolchain.environment())
    yield s
    s.stop()


def served(servers, argv, **kwargs):
    env = servers.environment(kwargs.pop("env", toolchain.environment()))
    return subprocess.run(servers.command(argv), env=env, **kwargs)


def direct(argv, **kwargs):
    return subprocess.run(argv, env=kwargs.pop("env", toolchain.environment()), **kwargs)


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(p) for p in f.read().split()]


def descendants(pid):
    out = []
    for child in children(pid):
        out += [child] + descendants(child)
    return out


def server_pids(servers):
    return [p.pid for p in servers._processes]


def test_every_tool_of_an_offload_compile_gets_a_server(servers):
    for name in ("clang", "clang-linker-wrapper", "llvm-offload-binary", "ld.lld"):
        assert os.path.realpath(toolchain.tool(name)) in servers.served, name
        assert os.path.exists(compile_server.socket_path(servers.directory, toolchain.tool(name)))


def test_an_offload_build_is_the_one_a_direct_compile_makes(servers, tmp_path):
    (tmp_path / "p.c").write_text(PROGRAM)
    argv = [CLANG, *OFFLOAD, "-O1", "p.c", "-o", "p"]
    one = direct(argv, cwd=tmp_path, capture_output=True)
    assert one.returncode == 0, one.stderr
    first = (tmp_path / "p").read_bytes()
    before = {p: len(descendants(p)) for p in server_pids(servers)}
    two = served(servers, argv, cwd=tmp_path, capture_output=True)
    assert two.returncode == 0, two.stderr
    assert (two.stdout, two.stderr) == (one.stdout, one.stderr)
    assert (tmp_path / "p").read_bytes() == first
    run = subprocess.run([str(tmp_path / "p")], capture_output=True, text=True,
                         env=dict(os.environ, OMP_TARGET_OFFLOAD="MANDATORY",
                                  LD_LIBRARY_PATH=toolchain.LLVM_LIB))
    assert run.stdout == "21 8\n", run.stderr
    # The servers ran it: each is still there, with nothing of the compile left under it.
    assert all(p.poll() is None for p in servers._processes)
    assert {p: len(descendants(p)) for p in server_pids(servers)} == before


def test_a_failing_compile_says_the_same_and_ends_the_same(servers, tmp_path):
    (tmp_path / "bad.c").write_text("int main(void) { return undeclared; }\n")
    argv = [CLANG, *OFFLOAD, "bad.c", "-o", "bad"]
    one = direct(argv, cwd=tmp_path, capture_output=True, text=True)
    two = served(servers, argv, cwd=tmp_path, capture_output=True, text=True)
    assert one.returncode != 0
    assert "use of undeclared identifier 'undeclared'" in one.stderr
    assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr)


def test_the_program_gets_the_clients_stdin_cwd_environment_and_umask(servers, tmp_path):
    include = tmp_path / "inc"
    include.mkdir()
    (include / "answer.h").write_text("#define ANSWER 42\n")
    (tmp_path / "sub").mkdir()
    argv = [CLANG, "-E", "-P", "-x", "c", "-", "-o", "out.i"]
    env = dict(toolchain.environment(), CPATH=str(include))
    source = "#include <answer.h>\nint v = ANSWER;\n"
    old = os.umask(0o077)
    try:
        r = served(servers, argv, cwd=tmp_path / "sub", input=source, text=True, env=env, capture_output=True)
    finally:
        os.umask(old)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "sub" / "out.i"
    assert out.read_text().split() == ["int", "v", "=", "42;"]
    assert out.stat().st_mode & 0o777 == 0o600


def test_a_program_a_signal_ends_ends_its_client_by_that_signal(servers, tmp_path):
    # clang -E reading a pipe that stays open runs until it is killed.
    proc = subprocess.Popen(servers.command([CLANG, "-E", "-x", "c", "-"]), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, env=servers.environment(toolchain.environment()))
    program = wait_for_program(servers)
    os.kill(program, signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    proc.stdin.close()


def test_killing_the_client_ends_its_program(servers):
    proc = subprocess.Popen(servers.command([CLANG, "-E", "-x", "c", "-"]), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, env=servers.environment(toolchain.environment()))
    program = wait_for_program(servers)
    proc.kill()
    proc.wait()
    assert gone(program), "the program of a killed client still runs"
    proc.stdin.close()


def test_without_a_server_the_client_runs_the_program_itself(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != compile_server.DIR_VARIABLE}
    r = subprocess.run([paths.COMPILE_CLIENT, "/bin/sh", "sh", "-c", "echo $0 $1; exit 7", "zero", "one"],
                       capture_output=True, text=True, env=env)
    assert (r.returncode, r.stdout) == (7, "zero one\n")
    r = subprocess.run([paths.COMPILE_CLIENT, str(tmp_path / "none"), "none"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 127
    assert r.stderr == "ompsim-cc-client: cannot run %s: No such file or directory\n" % (tmp_path / "none")


def test_a_shell_with_the_library_preloaded_reaches_the_servers(servers):
    proc = subprocess.Popen(["bash", "-c", "true; %s -E -x c -" % CLANG], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, env=servers.environment(toolchain.environment()))
    # bash's exec of clang ran the client, and clang runs as a fork of its server.
    program = wait_for_program(servers)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert gone(program)


def test_the_servers_end_with_the_process_that_started_them(tmp_path):
    script = textwrap.dedent("""
        import os, sys, time
        from ompsim_base import compile_server, toolchain
        s = compile_server.Servers.start(toolchain.environment())
        print(s.directory, *[p.pid for p in s._processes], flush=True)
        time.sleep(600)
        """)
    starter = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ, PYTHONPATH=os.path.join(paths.ROOT, "scripts", "lib"),
                                        TMPDIR=str(tmp_path)))
    directory, *pids = starter.stdout.readline().split()
    assert pids and os.path.isdir(directory)
    starter.kill()
    starter.wait()
    for pid in pids:
        assert gone(int(pid)), "a compile server outlived its starter"
    deadline = time.monotonic() + 10
    while os.path.exists(directory) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(directory), os.listdir(directory)


def test_a_harness_compile_runs_through_this_processes_servers(tmp_path, monkeypatch):
    from conformance.harness import build
    monkeypatch.delenv("OMPSIM_COMPILE_SERVER", raising=False)
    (tmp_path / "p.c").write_text(PROGRAM)
    rc, out = build._compile([CLANG, *OFFLOAD, "p.c", "-o", "p"], str(tmp_path), toolchain.environment())
    assert (rc, out) == (0, "")
    servers = compile_server.started()
    assert servers is not None and os.path.realpath(CLANG) in servers.served


def test_off_switch(monkeypatch):
    monkeypatch.setenv("OMPSIM_COMPILE_SERVER", "0")
    assert not compile_server.wanted()


def wait_for_program(servers):
    """The pid of the program a server runs (a child of a worker), once there is one."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in server_pids(servers):
            for worker in children(pid):
                programs = children(worker)
                if programs:
                    return programs[0]
        time.sleep(0.02)
    raise AssertionError("no server ran the program")


def gone(pid, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False
