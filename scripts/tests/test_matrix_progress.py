"""`ompsim matrix` shows its progress while it runs: piped, one line per finished program;
on a terminal (a pseudo-terminal here), a status line rewritten in place that ends in the
final table; with -q, only the final table. Each run is a three-program suite on the stock
column (host-upstream), one of them a GCC-style `.C` file that only compiles as C++."""
import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time

import pytest

from ompsim_base import paths

pytestmark = pytest.mark.e2e

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")

PROGRAMS = {
    "ok.c": "int main(void) {\n  int x = 0;\n#pragma omp target map(tofrom : x)\n  x = 1;\n  return x != 1;\n}\n",
    "exits_three.c": "int main(void) { return 3; }\n",
    # C++ only (a template, std::vector): built as C it would not compile.
    "klass.C": "#include <vector>\ntemplate <typename T> struct Box { T v; T get() const { return v; } };\n"
               "int main() {\n  std::vector<int> a{1, 2, 3};\n  Box<int> b{a[1]};\n  int r = 0;\n"
               "#pragma omp target map(from : r)\n  r = 2;\n  return b.get() == r ? 0 : 1;\n}\n",
}
#: The final table's rows: the failing program is unexpected (!).
ROWS = [r"small/exits_three\.c\s+FAIL!", r"small/klass\.C\s+pass", r"small/ok\.c\s+pass"]


def matrix_args(tmp_path, *extra):
    suite = tmp_path / "small"
    suite.mkdir(exist_ok=True)
    for name, text in PROGRAMS.items():
        (suite / name).write_text(text)
    return [OMPSIM, "matrix", "--no-build", "--suite", str(suite), "--backend", "host-upstream",
            "--out", str(tmp_path / "out"), "-j", "1", *extra]


def assert_table(text):
    for row in ROWS:
        assert re.search(r"(?m)^%s\s*$" % row, text), text
    assert "unexpected outcomes: 1" in text, text


def test_piped_prints_one_line_per_finished_program(tmp_path):
    r = subprocess.run(matrix_args(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    assert r.returncode == 1, r.stdout             # one unexpected FAIL
    lines = r.stdout.splitlines()
    assert lines[1] == "ompsim matrix: collecting the programs of %s ..." % (tmp_path / "small"), lines
    assert re.fullmatch(r"ompsim matrix: 3 cells: 3 programs on 1 column \(collected in [\d.]+s\)", lines[2]), lines
    done = lines[3:6]
    assert sorted(re.sub(r"^\[\d/3 \d+:\d\d\] ", "", line) for line in done) == [
        "small/exits_three.c: host-upstream/native FAIL!",
        "small/klass.C: host-upstream/native pass",
        "small/ok.c: host-upstream/native pass"], lines
    assert [line[:5] for line in done] == ["[1/3 ", "[2/3 ", "[3/3 "], lines
    assert lines[6].startswith("program "), lines          # then the final table
    assert_table(r.stdout)
    assert "\r" not in r.stdout and "\x1b" not in r.stdout


def test_quiet_prints_only_the_table(tmp_path):
    r = subprocess.run(matrix_args(tmp_path, "-q"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    assert r.returncode == 1, r.stdout
    lines = r.stdout.splitlines()
    assert lines[0].startswith("ompsim matrix: ") and " -m pytest " in lines[0], lines
    assert lines[1].startswith("program "), lines
    assert_table(r.stdout)
    assert "collecting" not in r.stdout and "[1/3" not in r.stdout


def read_pty(argv, columns=160, timeout=600):
    """Runs argv on a pseudo-terminal `columns` wide; returns (exit status, everything it wrote)."""
    pid, fd = pty.fork()
    if pid == 0:   # the child: its stdout is the terminal
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    data, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:         # EIO: the child has closed the terminal
                break
            if not chunk:
                break
            data += chunk
    finally:
        if time.monotonic() >= deadline:
            os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), data.decode("utf-8", "replace")


def test_terminal_shows_a_live_status_line_that_ends_in_the_table(tmp_path):
    code, text = read_pty(matrix_args(tmp_path))
    assert code == 1, text
    text = text.replace("\r\n", "\n")
    statuses = [s.split("\n")[0] for s in text.split("\r\x1b[K")[1:]]
    cells = [s for s in statuses if re.match(r"ompsim matrix: \d/3 cells", s)]
    pattern = (r"ompsim matrix: (\d)/3 cells \| (\d) pass, (\d) fail, (\d) unexpected"
               r"(?: \| (\d) compiled, (\d) cached)? \| \d+:\d\d, "
               r"(?:~\d+:\d\d|\?) left(?: \| longest running: \d+s small/\S+ on host-upstream/native)?")
    for s in cells:
        assert re.fullmatch(pattern, s), s
        assert len(s) < 160
    done = [int(re.match(pattern, s).group(1)) for s in cells]
    assert done == sorted(done) and done[0] == 0 and done[-1] == 3, cells
    assert any("longest running: " in s for s in cells), cells       # drawn at each cell's start
    # Each of the three cells compiled its program, or found it in the compile cache.
    last = re.fullmatch(pattern, cells[-1])
    assert last.group(5) and int(last.group(5)) + int(last.group(6)) == 3, cells[-1]
    assert re.fullmatch(pattern, cells[-1]) and cells[-1].startswith(
        "ompsim matrix: 3/3 cells | 2 pass, 1 fail, 1 unexpected |"), cells[-1]
    # The unexpected failure got a lasting line; passing programs did not (the table has them).
    assert re.search(r"\r\x1b\[K\[\d/3 \d+:\d\d\] small/exits_three\.c: host-upstream/native FAIL!\n", text), text
    assert "small/ok.c: host-upstream/native" not in text
    # The status line is cleared, then the final table follows.
    assert re.search(r"\r\x1b\[Kprogram +host-upstream/native", text), text
    assert_table("program " + text.split("\r\x1b[Kprogram ", 1)[1])


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().rstrip(b"\0")
    except OSError:
        return b""


def processes_naming(text):
    """Pids of the processes whose command line holds `text` (the run's own tmp folder)."""
    return [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and text.encode() in _cmdline(int(pid))]


def gone(text, seconds=30):
    deadline = time.monotonic() + seconds
    while processes_naming(text) and time.monotonic() < deadline:
        time.sleep(0.2)
    return processes_naming(text) == []


def slow_matrix_args(tmp_path):
    """The small suite with one program that runs for minutes: the run outlasts each test."""
    args = matrix_args(tmp_path)
    (tmp_path / "small" / "slow.c").write_text("#include <unistd.h>\nint main(void) { sleep(300); return 0; }\n")
    return args


def ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def program_pids(name):
    """Pids of the cells' programs built from `name` (its compile cache entry's `prog`)."""
    return [pid for pid in processes_naming("/" + name) if _cmdline(pid).endswith(b"/prog")]


def running_program(name, seconds=120):
    """Waits until a cell runs the program built from `name`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if program_pids(name):
            return True
        time.sleep(0.1)
    return False


def test_sigterm_stops_the_pytest_run_too(tmp_path):
    # A CI job's timeout sends SIGTERM to the command: nothing of the run may outlive it.
    # SIGINT ignored, as a CI runner's non-interactive shell starts a job in the background.
    proc = subprocess.Popen(slow_matrix_args(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=ignore_sigint)
    for _ in range(3):                              # the command line, collecting, the cell count
        proc.stdout.readline()
    # While a worker runs the program that sleeps for minutes: the worker is interrupted
    # too, and kills it. (pytest inherited SIGINT ignored, and the SIGINT passed on reached
    # its main process alone: each worker ran its program to the cell's timeout, a
    # minute, which the report then showed.)
    assert running_program("small_slow.c-"), proc.stdout.read() if proc.poll() is not None else ""
    proc.send_signal(15)
    rest = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, rest
    assert gone(str(tmp_path)), processes_naming(str(tmp_path))
    assert not running_program("small_slow.c-", seconds=0), "the cell's program outlived the run"
    with open(tmp_path / "out" / "results.json") as f:
        cells = {r["program"]: r["outcome"] for r in json.load(f)["records"]}
    assert "small/slow.c" not in cells, cells       # interrupted, never run to its timeout


def test_a_closed_pipe_stops_the_pytest_run_too(tmp_path):
    # `ompsim matrix | head -2`: the reader goes away early; pytest must not go on alone.
    proc = subprocess.Popen(slow_matrix_args(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            preexec_fn=ignore_sigint)
    for _ in range(4):                              # up to the first finished program
        proc.stdout.readline()
    # Closed while a worker runs the program that sleeps for minutes: the run stops at
    # once (not when that cell ends, the next line it would write), its worker too.
    assert running_program("small_slow.c-")
    proc.stdout.close()
    proc.wait(timeout=120)
    assert proc.returncode != 0
    assert gone(str(tmp_path)), processes_naming(str(tmp_path))
    assert not running_program("small_slow.c-", seconds=0), "the cell's program outlived the run"
    with open(tmp_path / "out" / "results.json") as f:
        cells = {r["program"]: r["outcome"] for r in json.load(f)["records"]}
    assert "small/slow.c" not in cells, cells       # interrupted, never run to its timeout


def test_pytest_does_not_outlive_a_killed_matrix(tmp_path):
    # pytest runs in a process group of its own (so that an interruption reaches its
    # workers), out of reach of a SIGKILL sent to the matrix's group; a SIGKILL of
    # `ompsim matrix` itself, which no handler sees, still ends it (its pipes close). The
    # slow program would keep the run going for a minute.
    proc = subprocess.Popen(slow_matrix_args(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for _ in range(3):                              # the command line, collecting, the cell count
        proc.stdout.readline()
    pytest = [pid for pid in processes_naming(str(tmp_path / "out")) if pid != proc.pid]
    assert pytest, "no pytest"
    try:
        proc.kill()
        proc.wait()
        assert gone(str(tmp_path / "out"), seconds=20), processes_naming(str(tmp_path / "out"))
    finally:
        # A cell's program runs in a session of its own: killed outright, its worker
        # cannot end it (ompsim's own interruptions do, above).
        for pid in program_pids("small_slow.c-"):
            with contextlib.suppress(ProcessLookupError):  # a program that ended meanwhile
                os.kill(pid, signal.SIGKILL)
