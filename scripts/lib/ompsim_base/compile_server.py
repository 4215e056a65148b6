"""The compile server (docs/compile-server.md): a started copy of each LLVM tool a compile
runs (clang-22, flang-22, clang-linker-wrapper, llvm-offload-binary, lld), whose forks run
the compile's processes, so that each skips the start of libLLVM and libclang-cpp.

`started()` starts this process's servers at its first call (one per tool, in a folder of
their own under TMPDIR, or /tmp where that path is too long for a socket) and returns them;
`command()` and `environment()` make a compile use them. Each server ends when this process
does: it holds a pipe whose other end only this process has. OMPSIM_COMPILE_SERVER=0 turns
them off; so does a build without libompsim-compile-server.so. A server that does not start
is left out with one line on stderr, and its tool runs as a process of its own.
"""
import atexit
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from . import paths, toolchain

#: The tools that get a server: every LLVM 22 program a compile starts.
TOOLS = ("clang", "flang", "clang-linker-wrapper", "llvm-offload-binary", "ld.lld")
#: How long a server may take to start.
START_TIMEOUT = 30
_SOCKET_PATH_MAX = 107

DIR_VARIABLE = "OMPSIM_COMPILE_SERVER_DIR"
_SOCKET_VARIABLE = "OMPSIM_COMPILE_SERVER_SOCKET"
_LIFELINE_VARIABLE = "OMPSIM_COMPILE_SERVER_LIFELINE"

_lock = threading.Lock()
_servers = None


def socket_path(directory, program):
    """The socket of `program`'s server (tools/compile-server/Protocol.h: socketPath)."""
    h = 0xcbf29ce484222325
    for byte in os.path.realpath(program).encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(directory, "%016x.sock" % h)


def wanted():
    """Whether compiles use servers here: on unless OMPSIM_COMPILE_SERVER=0, where ompsim's
    build has the library and the client."""
    return (os.environ.get("OMPSIM_COMPILE_SERVER", "1") != "0" and os.path.exists(paths.COMPILE_SERVER_LIBRARY)
            and os.access(paths.COMPILE_CLIENT, os.X_OK))


class Servers:
    """One folder of servers, one per tool, and the pipe that keeps them alive."""

    def __init__(self, directory, lifeline, processes, served):
        self._owner = os.getpid()
        self.directory = directory
        self._lifeline = lifeline
        self._processes = processes
        #: The real paths of the programs served.
        self.served = served

    @classmethod
    def start(cls, env, tools=TOOLS):
        # A socket's path has at most 107 bytes: a deep TMPDIR gives way to /tmp.
        base = tempfile.gettempdir()
        if len(os.path.join(base, "ompsim-cc.xxxxxxxx", "%016x.sock.new" % 0)) > _SOCKET_PATH_MAX:
            base = "/tmp"
        directory = tempfile.mkdtemp(prefix="ompsim-cc.", dir=base)
        read_end, write_end = os.pipe()
        servers = cls(directory, write_end, [], [])
        # All start at once, then each is waited for: their starts overlap.
        try:
            launched = [servers._launch(program, env, read_end) for program in map(toolchain.tool, tools)
                        if os.path.isabs(program) and os.access(program, os.X_OK)]
        finally:
            os.close(read_end)
        for program, sock, proc in filter(None, launched):
            servers._await(program, sock, proc)
        return servers

    def _launch(self, program, env, read_end):
        """(program, its socket, its server's process), or None where it cannot start."""
        sock = socket_path(self.directory, program)
        server_env = dict(env)
        server_env.update({_SOCKET_VARIABLE: sock, _LIFELINE_VARIABLE: str(read_end), "LD_BIND_NOW": "1",
                           "LD_PRELOAD": paths.COMPILE_SERVER_LIBRARY})
        server_env.pop(DIR_VARIABLE, None)
        try:
            # In / and a session of its own: it keeps no folder busy, and a signal to the
            # starter's process group is not for it (its lifeline ends it).
            return program, sock, subprocess.Popen(
                [program], env=server_env, pass_fds=(read_end,), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, cwd="/")
        except OSError as e:
            _say("%s: cannot start its compile server: %s" % (program, e.strerror))
            return None

    def _await(self, program, sock, proc):
        """Keeps `proc` once it listens on `sock`; else ends it, with a line saying why."""
        # Ready when it closes its stderr (after listening), or it failed and says why there.
        text, deadline = b"", time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            text += chunk
        proc.stderr.close()
        if proc.poll() is None and os.path.exists(sock):
            self._processes.append(proc)
            self.served.append(os.path.realpath(program))
            return
        proc.kill()
        proc.wait()
        why = text.decode(errors="replace").strip() or "it did not start within %d s" % START_TIMEOUT
        _say("%s: no compile server, its compiles run as processes of their own: %s" % (program, why))

    def environment(self, env):
        """`env` for a compile that uses these servers: the folder, and the library preloaded
        into what the compile runs first (a shell, `ompsim cc`), so that it reaches them too."""
        out = dict(env)
        out[DIR_VARIABLE] = self.directory
        preload = out.get("LD_PRELOAD", "")
        out["LD_PRELOAD"] = paths.COMPILE_SERVER_LIBRARY + (":" + preload if preload else "")
        return out

    def command(self, argv):
        """argv run by the client: through its program's server where it has one, else by exec."""
        return [paths.COMPILE_CLIENT, argv[0], *argv]

    def stop(self):
        """Ends the servers (closing the lifeline), and removes their folder; in the process
        that started them only (a fork's copy of the lifeline keeps nothing alive)."""
        if self._lifeline is None or os.getpid() != self._owner:
            return
        os.close(self._lifeline)
        self._lifeline = None
        for proc in self._processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def _say(line):
    sys.stderr.write("ompsim: %s\n" % line)


def started():
    """This process's servers, started at the first call; None where they are off."""
    global _servers
    if not wanted():
        return None
    with _lock:
        if _servers is None:
            _servers = Servers.start(toolchain.environment())
            atexit.register(_servers.stop)
        return _servers
