"""What a user sees: chains of zero-work steps run through the CLI (printed, never asserted).

``workbench run --headless --engine E chain.yaml`` in a fresh workspace (the SQLite run
store; LangGraph's checkpoint file beside it), its output discarded, for chains of 60,
1,000 and 4,000 ``demo.echo`` steps on Kahn and on LangGraph. Wall seconds and the CPU
seconds (user + sys) of the process, best of a few runs (on a machine shared with other
work, wall time mostly measures waiting for a core, CPU time much less); then the marginal cost per step from 60 to 1,000 steps and from 1,000 to 4,000 —
the process's start (imports, the workspace) cancels out — and their ratio. An engine
whose cost per step does not grow with the workflow has a ratio near 1.0.

With ``BENCH_COMPARE_WITH=/tmp/main`` (an export of another tree, e.g. ``git archive main``)
the same chains run on that tree's code too, in the same run — each run of a chain on one tree
right after the same run on the other — and the before / after ratio of each figure is
printed. ``BENCH_CLI_SIZES`` and ``BENCH_CLI_RUNS`` choose other sizes and
run counts (below) for a quicker look while developing.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES_KNOB = "BENCH_CLI_SIZES"
"""An environment variable with three chain sizes to measure instead of 60, 1,000 and 4,000
(``BENCH_CLI_SIZES=60,300,1000``: a few minutes instead of half an hour, while developing)."""
RUNS_KNOB = "BENCH_CLI_RUNS"
"""An environment variable with the runs per cell of this tree (``kahn,langgraph``, e.g. ``1,1``)."""


def _sizes() -> tuple[int, int, int]:
    small, middle, large = (
        int(size) for size in os.environ.get(SIZES_KNOB, "60,1000,4000").split(",")
    )
    return small, middle, large


def _runs() -> dict[str, int]:
    kahn, langgraph = (int(runs) for runs in os.environ.get(RUNS_KNOB, "3,2").split(","))
    return {"kahn": kahn, "langgraph": langgraph}


SIZES = _sizes()
SMALL, MIDDLE, LARGE = SIZES
RUNS = _runs()
"""Runs per cell and tree (the best is used): LangGraph's take longer."""
COMPARE_WITH = "BENCH_COMPARE_WITH"
"""An environment variable naming another source tree measured beside this one."""

Timing = tuple[float, float]
"""(wall seconds, CPU seconds of the finished child process)."""
Marginal = tuple[float, float]
"""Seconds per step from the small chain to the middle one and from the middle to the large."""
Found = dict[str, dict[str, Marginal]]
"""Marginal costs per step by engine and by measure ("wall", "CPU")."""


def chain_yaml(size: int) -> str:
    lines = ["name: chain", "steps:", "  - {id: s0, uses: demo.echo}"]
    lines += [f"  - {{id: s{i}, uses: demo.echo, depends_on: [s{i - 1}]}}" for i in range(1, size)]
    return "\n".join(lines) + "\n"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(engine: str, workflow: Path, tree: Path | None) -> Timing:
    """Wall and CPU seconds of one headless run in a fresh workspace: this tree's installed
    ``workbench``, or ``python -m tui.cli`` from another source tree."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "WORKBENCH_HOME": home}
        command = [str(Path(sys.executable).with_name("workbench"))]
        if tree is not None:
            env["PYTHONPATH"] = str(tree)
            command = [sys.executable, "-m", "tui.cli"]
        started, cpu = time.perf_counter(), children_cpu()
        subprocess.run(
            [*command, "run", "--headless", "--engine", engine, str(workflow)],
            env=env,
            cwd=tree,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        return time.perf_counter() - started, children_cpu() - cpu


def marginal(seconds: dict[int, float]) -> Marginal:
    return (
        (seconds[MIDDLE] - seconds[SMALL]) / (MIDDLE - SMALL),
        (seconds[LARGE] - seconds[MIDDLE]) / (LARGE - MIDDLE),
    )


def measure(files: dict[int, Path], trees: dict[str, Path | None]) -> dict[str, Found]:
    """Print each tree's and engine's best wall and CPU seconds per chain; return the marginal
    costs per step, by tree, engine and measure ("wall", "CPU").

    The runs go in rounds, and each round runs every chain once on every tree, the trees one
    right after the other: the load of a shared machine changes by the minute, and a tree
    measured a quarter of an hour after the other would be compared with another machine."""
    timings: dict[tuple[str, str, int], list[Timing]] = {}
    for engine, runs in RUNS.items():
        for _ in range(runs):
            for size in SIZES:
                for label, tree in trees.items():
                    timing = one_run(engine, files[size], tree)
                    timings.setdefault((label, engine, size), []).append(timing)
    found: dict[str, Found] = {}
    for label in trees:
        print(f"  {label}")
        found[label] = {}
        for engine, runs in RUNS.items():
            cells = [timings[(label, engine, size)] for size in SIZES]
            wall = {size: min(t[0] for t in cell) for size, cell in zip(SIZES, cells)}
            cpu = {size: min(t[1] for t in cell) for size, cell in zip(SIZES, cells)}
            print(
                f"  {engine:<10} "
                + " ".join(f"{wall[size]:8.2f}" for size in SIZES)
                + "   "
                + " ".join(f"{cpu[size]:8.2f}" for size in SIZES)
                + f"   {runs}"
            )
            found[label][engine] = {"wall": marginal(wall), "CPU": marginal(cpu)}
    return found


def report(found: Found) -> None:
    for measure_name in ("wall", "CPU"):
        for engine, by_measure in found.items():
            low, high = by_measure[measure_name]
            print(
                f"  {engine} ({measure_name}): {low * 1e3:.3f} ms per step from {SMALL:,} to"
                f" {MIDDLE:,}, {high * 1e3:.3f} ms from {MIDDLE:,} to {LARGE:,} — ratio"
                f" {high / low:.2f} (target ≤ 1.5)"
            )
        kahn, lang = found["kahn"][measure_name], found["langgraph"][measure_name]
        print(
            f"  LangGraph / Kahn ({measure_name}), marginal cost per step:"
            f" {lang[0] / kahn[0]:.1f}x from {SMALL:,} to {MIDDLE:,}, {lang[1] / kahn[1]:.1f}x"
            f" from {MIDDLE:,} to {LARGE:,} (target ≥ 10)"
        )


def main() -> None:
    print(
        "workbench run --headless, chains of zero-work steps (SQLite store, output discarded),"
        " wall s, best of n runs"
    )
    other = os.environ.get(COMPARE_WITH)
    with tempfile.TemporaryDirectory() as folder:
        files = {size: Path(folder) / f"chain_{size}.yaml" for size in SIZES}
        for size, path in files.items():
            path.write_text(chain_yaml(size), encoding="utf-8")
        sizes = " ".join(f"{size:>8}" for size in SIZES)
        print(f"  {'':<10} {'wall s':>26}   {'CPU s':>26}")
        print(f"  {'engine':<10} {sizes}   {sizes}   runs")
        trees: dict[str, Path | None] = {"this tree": None}
        if other:
            trees[f"before: {other}"] = Path(other)
        found = measure(files, trees)
    after = found["this tree"]
    before = found.get(f"before: {other}")
    print("  this tree:")
    report(after)
    if before is None:
        return
    print(f"  before ({other}):")
    report(before)
    for engine in RUNS:
        for measure_name in ("wall", "CPU"):
            low, high = (
                b / a
                for b, a in zip(
                    before[engine][measure_name], after[engine][measure_name], strict=True
                )
            )
            print(
                f"  {engine}, before / after ({measure_name}), marginal cost per step: {low:.1f}x"
                f" from {SMALL:,} to {MIDDLE:,}, {high:.1f}x from {MIDDLE:,} to {LARGE:,}"
            )


if __name__ == "__main__":
    main()
