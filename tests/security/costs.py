"""What an attack costs the process it is aimed at: CPU seconds, wall seconds and peak resident
memory of one child process, read from the kernel's accounting of that child (``wait4``).

The tests assert a memory bound far above what the refused attack needs and far below what it
cost before (e.g. 300 MB against 1.5 GB); time is measured and reported, never asserted
(TEAM.md: no test fails by timing). ``python -m tests.security.attack_costs`` prints the
figures of each attack, for this tree and for another one (``--before``) side by side.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Cost:
    cpu_s: float
    wall_s: float
    peak_mb: float

    def __str__(self) -> str:
        return f"{self.wall_s:.2f} s wall, {self.cpu_s:.2f} s CPU, {self.peak_mb:.0f} MB peak"


@dataclass(frozen=True)
class Ran:
    exit_code: int
    stdout: str
    stderr: str
    cost: Cost


def measured(args: list[str], *, env: dict[str, str], cwd: Path) -> Ran:
    """Run ``args`` to its end; its exit code, output and cost."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        child = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Ran(
            child.returncode,
            out.read().decode("utf-8", errors="replace"),
            err.read().decode("utf-8", errors="replace"),
            Cost(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024),
        )
