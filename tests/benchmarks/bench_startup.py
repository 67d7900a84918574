"""Start-up benchmarks: how long a person waits for `workbench --help`, `workbench validate` and
the app's first frame, beside the bare interpreter's start-up on the same machine in the same run.

Each figure is the median of several fresh processes: the wall time a person waits, and the CPU
time (user + sys) the process spent, which a loaded machine inflates less. Python's bytecode
caches are written first and kept (as an installed workbench has them), so compiling the
project's modules is not counted. Nothing is asserted about time.
"""

from __future__ import annotations

import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pexpect

ROUNDS = 5
BIN = Path(sys.executable).parent
WORKBENCH = str(BIN / "workbench")
PROJECT = Path(__file__).resolve().parents[2]
LISTED = "deep_research"
"""A shipped workflow's name: on screen once Home has loaded the workflow list."""
VALIDATED = [PROJECT / "workflows" / name for name in ("approval.yaml", "deep_research.yaml")]
"""A workflow of built-in demo steps, and one whose steps are research's."""


PACKAGES = ("engine", "research", "router", "tui", "workflows")


def _environment(workspace: str) -> dict[str, str]:
    environment = dict(os.environ)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return {
        **environment,
        "WORKBENCH_HOME": workspace,
        "WORKBENCH_CONFIG": str(Path(workspace) / "config.yaml"),
        "TERM": "xterm-256color",
    }


Timing = tuple[float, float]
"""(wall seconds, CPU seconds of the finished child processes)."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_process(command: list[str], env: dict[str, str]) -> Timing:
    started, cpu = time.perf_counter(), _children_cpu()
    subprocess.run(command, env=env, cwd=PROJECT, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - started, _children_cpu() - cpu


def _app_start(env: dict[str, str]) -> tuple[float, float]:
    """From spawning `workbench` in a pseudo-terminal to Home's first frame, and to its workflow
    list filled in (loaded by a worker after the first frame)."""
    started = time.perf_counter()
    child = pexpect.spawn(WORKBENCH, env=env, cwd=str(PROJECT), dimensions=(48, 160))
    child.expect("Workflows", timeout=120)
    first_frame = time.perf_counter() - started
    child.expect(LISTED, timeout=120)
    listed = time.perf_counter() - started
    child.sendcontrol("q")
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    return first_frame, listed


def _medians_ms(measure: Callable[[], Timing]) -> Timing:
    timings = [measure() for _ in range(ROUNDS)]
    return (
        statistics.median(wall for wall, _ in timings) * 1000,
        statistics.median(cpu for _, cpu in timings) * 1000,
    )


def _app_medians_ms(env: dict[str, str]) -> tuple[float, float]:
    starts = [_app_start(env) for _ in range(ROUNDS)]
    return (
        statistics.median(first for first, _ in starts) * 1000,
        statistics.median(listed for _, listed in starts) * 1000,
    )


def _write_bytecode_caches() -> None:
    for package in PACKAGES:
        compileall.compile_dir(PROJECT / package, quiet=1)


def main() -> None:
    _write_bytecode_caches()
    with tempfile.TemporaryDirectory() as workspace:
        env = _environment(workspace)
        first_frame, listed = _app_medians_ms(env)
        processes = {
            "python -c pass (the interpreter alone)": _medians_ms(
                lambda: _timed_process([sys.executable, "-c", "pass"], env)
            ),
            "workbench --help": _medians_ms(lambda: _timed_process([WORKBENCH, "--help"], env)),
            **{
                f"workbench validate {path.relative_to(PROJECT)}": _medians_ms(
                    partial(_timed_process, [WORKBENCH, "validate", str(path)], env)
                )
                for path in VALIDATED
            },
        }
    baseline_wall, baseline_cpu = next(iter(processes.values()))
    print(f"{'median of ' + str(ROUNDS) + ' fresh processes':58} {'wall':>10} {'CPU':>10}")
    for name, (wall, cpu) in processes.items():
        print(
            f"{name:58} {wall:7.0f} ms {cpu:7.0f} ms"
            f"  ({wall / baseline_wall:4.1f}x / {cpu / baseline_cpu:4.1f}x the interpreter)"
        )
    for name, wall in (
        ("workbench (the app's first frame)", first_frame),
        ("workbench (Home's workflow list filled in)", listed),
    ):
        print(f"{name:58} {wall:7.0f} ms  ({wall / baseline_wall:4.1f}x the interpreter)")


if __name__ == "__main__":
    main()
