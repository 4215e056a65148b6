"""Known defects of the host OpenMP runtime that every column loads.

Every column, stock's included, runs its programs on the same host OpenMP runtime: the
libomp.so.5 of Debian's libomp5-19 (19.1.7), which libomp-22-dev depends on and links
/usr/lib/llvm-22/lib/libomp.so.5 to. A defect of that runtime is not the column's: a run
it ends is made again, and the cell is judged by the run that got past it. Each entry
here names its defect by the exact line libomp prints, and says how it was found;
docs/reliability.md has the measurements. Nothing else is ever run again.
"""
import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class Defect:
    """A defect of the host OpenMP runtime: its short name, the line it prints (a regular
    expression), and what is known of it."""
    name: str
    pattern: re.Pattern
    cause: str


DEFECTS = (
    Defect(
        "libomp 19.1.7's hidden helper task race",
        re.compile(r"Assertion failure at kmp_tasking\.cpp\(4368\): task_team != __null"),
        "a 'target nowait' task allocated while the hidden helper thread it goes to has no task "
        "team is given a null one, and libomp aborts when it pushes the task (__kmpc_omp_task); "
        "OpenMP_VV's test_target_teams_distribute_nowait.c aborted so in 6 of 300 runs on stock's "
        "host plugin, without ompsim",
    ),
)

#: How many more times a run that one of DEFECTS ended is made. The one above ended up to
#: 1 run in 15 (with KMP_BLOCKTIME=infinite), so four in a row about 1 in 50,000.
RERUNS = 3


def found(text):
    """The defect among DEFECTS whose line is in `text` (a run's output), else None."""
    return next((d for d in DEFECTS if d.pattern.search(text)), None)
