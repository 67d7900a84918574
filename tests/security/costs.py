"""What an attack costs the process it is aimed at: CPU seconds, wall seconds and peak resident
memory of one process, read from the kernel's accounting of that process (``wait4``).

The tests assert a memory bound far above what the refused attack needs and far below what it
cost before (e.g. 300 MB against 1.5 GB); time is measured and reported, never asserted
(TEAM.md: no test fails by timing). ``python -m tests.security.attack_costs`` prints the
figures of each attack, for this tree and for another one (``--before``) side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys
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


PROBE = """
import json, os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump([os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime,
               usage.ru_maxrss], out)
"""
"""Starts the command from a small process of its own: a child forked from a big one (a test
worker) would be charged the big one's resident pages in its peak (Linux keeps the high-water
mark across fork and exec)."""


def measured(args: list[str], *, env: dict[str, str], cwd: Path) -> Ran:
    """Run ``args`` to its end; its exit code, output and cost."""
    with tempfile.TemporaryDirectory() as folder:
        figures = Path(folder) / "cost.json"
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(figures), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            cwd=cwd,
        )
        wall = time.monotonic() - started
        code, cpu, peak_kb = json.loads(figures.read_text())
    return Ran(
        code,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
        Cost(cpu, wall, peak_kb / 1024),
    )
