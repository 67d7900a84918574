"""Start-up benchmarks: how long a person waits for `workbench --help`, `workbench validate` and
the app's first output, first frame and key-to-paint, beside the bare interpreter's start-up on the
same machine in the same run (and beside another source tree, ``BENCH_COMPARE_WITH``).

Each figure is the median of several fresh processes: the wall time a person waits, and the CPU
time (user + sys) the process spent, which a loaded machine inflates less. Python's bytecode
caches are written first and kept (as an installed workbench has them), so compiling the
project's modules is not counted. Nothing is asserted about time.
"""

from __future__ import annotations

import compileall
import os
import re
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
RUN = "workflows/fan_out.yaml"
"""A headless run of demo steps (0.2 s of sleeping): what start-up adds to a short run."""


PACKAGES = ("engine", "research", "router", "tui", "workflows")
COMPARE_WITH = "BENCH_COMPARE_WITH"
"""An environment variable naming another source tree (an export of main) measured beside this
one: ``BENCH_COMPARE_WITH=/tmp/main make bench``."""


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


def _timed_process(command: list[str], env: dict[str, str], cwd: Path = PROJECT) -> Timing:
    started, cpu = time.perf_counter(), _children_cpu()
    subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - started, _children_cpu() - cpu


AppTimes = tuple[float, float, float, float]
"""(first output, Home's first frame, its workflow list filled in, key to paint) in seconds."""
FORM_TITLE = re.compile(rb"New run \S+ (\w+)")
STARTING = b"starting"
"""The line `workbench` shows before anything is imported (tui/entry.py)."""


def _app_start(env: dict[str, str], command: list[str], cwd: Path) -> AppTimes:
    """From spawning `workbench` in a pseudo-terminal to the first words it shows, to Home's first
    frame, to its workflow list filled in (loaded by a worker after the first frame); then from a
    key (Down in the workflow list) to the frame that shows the next workflow's form."""
    started = time.perf_counter()
    child = pexpect.spawn(command[0], command[1:], env=env, cwd=str(cwd), dimensions=(48, 160))
    child.expect([STARTING, b"Workflows"], timeout=120)  # words a person reads, not set-up codes
    first_output = time.perf_counter() - started
    child.expect("Workflows", timeout=120)
    first_frame = time.perf_counter() - started
    child.expect(LISTED, timeout=120)
    listed = time.perf_counter() - started
    child.expect(FORM_TITLE, timeout=120)
    shown = child.match.group(1)
    pressed = time.perf_counter()
    child.send("\x1b[B")
    while True:
        child.expect(FORM_TITLE, timeout=120)
        if child.match.group(1) != shown:
            break
    key_to_paint = time.perf_counter() - pressed
    child.sendcontrol("q")
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    return first_output, first_frame, listed, key_to_paint


def _medians_ms(measure: Callable[[], Timing]) -> Timing:
    timings = [measure() for _ in range(ROUNDS)]
    return (
        statistics.median(wall for wall, _ in timings) * 1000,
        statistics.median(cpu for _, cpu in timings) * 1000,
    )


def _app_medians_ms(env: dict[str, str], command: list[str], cwd: Path) -> list[float]:
    starts = [_app_start(env, command, cwd) for _ in range(ROUNDS)]
    return [statistics.median(times) * 1000 for times in zip(*starts)]


def _write_bytecode_caches() -> None:
    for package in PACKAGES:
        compileall.compile_dir(PROJECT / package, quiet=1)


def main() -> None:
    _write_bytecode_caches()
    with tempfile.TemporaryDirectory() as workspace:
        env = _environment(workspace)
        app_times = {"this checkout": _app_medians_ms(env, [WORKBENCH], PROJECT)}
        run = ["run", RUN, "--headless"]
        runs = {
            f"workbench {' '.join(run)}": _medians_ms(
                partial(_timed_process, [WORKBENCH, *run], env)
            )
        }
        other = os.environ.get(COMPARE_WITH)
        if other:  # e.g. an export of main: the same measurement of it, side by side
            other_env = {**env, "PYTHONPATH": other}
            app_times[other] = _app_medians_ms(
                other_env, [sys.executable, "-m", "tui.cli"], Path(other)
            )
            runs[f"  the same from {other}"] = _medians_ms(
                partial(
                    _timed_process, [sys.executable, "-m", "tui.cli", *run], other_env, Path(other)
                )
            )
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
            **runs,
        }
    baseline_wall, baseline_cpu = next(iter(processes.values()))
    print(f"{'median of ' + str(ROUNDS) + ' fresh processes':58} {'wall':>10} {'CPU':>10}")
    for name, (wall, cpu) in processes.items():
        print(
            f"{name:58} {wall:7.0f} ms {cpu:7.0f} ms"
            f"  ({wall / baseline_wall:4.1f}x / {cpu / baseline_cpu:4.1f}x the interpreter)"
        )
    for source, (first_output, first_frame, listed, key_to_paint) in app_times.items():
        print(f"workbench, the app, from {source}:")
        for name, wall in (
            ("  first output on the terminal", first_output),
            ("  Home's first frame", first_frame),
            ("  Home's workflow list filled in", listed),
            ("  a key (Down) to the frame that shows its effect", key_to_paint),
        ):
            print(f"{name:58} {wall:7.0f} ms  ({wall / baseline_wall:4.1f}x the interpreter)")


if __name__ == "__main__":
    main()
