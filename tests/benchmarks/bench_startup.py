"""Start-up benchmarks: how long a person waits for `workbench --help`, `workbench validate` and
the app's first frame, beside the bare interpreter's start-up on the same machine in the same run.

Each figure is the median of several fresh processes; nothing is asserted about time.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def _environment(workspace: str) -> dict[str, str]:
    return {
        **os.environ,
        "WORKBENCH_HOME": workspace,
        "WORKBENCH_CONFIG": str(Path(workspace) / "config.yaml"),
        "TERM": "xterm-256color",
    }


def _timed_process(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=PROJECT, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - started


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
    return first_frame, listed


def _median_ms(measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(ROUNDS)) * 1000


def _app_medians_ms(env: dict[str, str]) -> tuple[float, float]:
    starts = [_app_start(env) for _ in range(ROUNDS)]
    return (
        statistics.median(first for first, _ in starts) * 1000,
        statistics.median(listed for _, listed in starts) * 1000,
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as workspace:
        env = _environment(workspace)
        first_frame, listed = _app_medians_ms(env)
        figures = {
            "python -c pass (the interpreter alone)": _median_ms(
                lambda: _timed_process([sys.executable, "-c", "pass"], env)
            ),
            "workbench --help": _median_ms(lambda: _timed_process([WORKBENCH, "--help"], env)),
            **{
                f"workbench validate {path.relative_to(PROJECT)}": _median_ms(
                    lambda path=path: _timed_process([WORKBENCH, "validate", str(path)], env)
                )
                for path in VALIDATED
            },
            "workbench (the app's first frame)": first_frame,
            "workbench (Home's workflow list filled in)": listed,
        }
    baseline = next(iter(figures.values()))
    for name, ms in figures.items():
        print(f"{name:58} {ms:7.0f} ms  ({ms / baseline:4.1f}x the interpreter)")


if __name__ == "__main__":
    main()
