"""What a user sees: chains of zero-work steps run through the CLI (printed, never asserted).

``workbench run --headless --engine E chain.yaml`` in a fresh workspace (the SQLite run
store; LangGraph's checkpoint file beside it), its output discarded, for chains of 60,
1,000 and 4,000 ``demo.echo`` steps on Kahn and on LangGraph. Wall seconds, best of a few
runs; then the marginal cost per step from 60 to 1,000 steps and from 1,000 to 4,000 —
the process's start (imports, the workspace) cancels out — and their ratio. An engine
whose cost per step does not grow with the workflow has a ratio near 1.0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (60, 1_000, 4_000)
RUNS = {"kahn": 3, "langgraph": 2}
"""Runs per cell (the best is used): LangGraph's take longer."""


def chain_yaml(size: int) -> str:
    lines = ["name: chain", "steps:", "  - {id: s0, uses: demo.echo}"]
    lines += [f"  - {{id: s{i}, uses: demo.echo, depends_on: [s{i - 1}]}}" for i in range(1, size)]
    return "\n".join(lines) + "\n"


def workbench() -> str:
    return str(Path(sys.executable).with_name("workbench"))


def one_run(engine: str, workflow: Path) -> float:
    """Wall seconds of one headless run in a fresh workspace."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "WORKBENCH_HOME": home}
        started = time.perf_counter()
        subprocess.run(
            [workbench(), "run", "--headless", "--engine", engine, str(workflow)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        return time.perf_counter() - started


def main() -> None:
    print(
        "workbench run --headless, chains of zero-work steps (SQLite store, output discarded),"
        " wall s, best of n runs"
    )
    with tempfile.TemporaryDirectory() as folder:
        files = {size: Path(folder) / f"chain_{size}.yaml" for size in SIZES}
        for size, path in files.items():
            path.write_text(chain_yaml(size), encoding="utf-8")
        marginal: dict[str, tuple[float, float]] = {}
        print(f"  {'engine':<10} " + " ".join(f"{size:>8}" for size in SIZES) + "   runs")
        for engine, runs in RUNS.items():
            best = {size: min(one_run(engine, files[size]) for _ in range(runs)) for size in SIZES}
            print(
                f"  {engine:<10} " + " ".join(f"{best[size]:8.2f}" for size in SIZES) + f"   {runs}"
            )
            small, middle, large = SIZES
            marginal[engine] = (
                (best[middle] - best[small]) / (middle - small),
                (best[large] - best[middle]) / (large - middle),
            )
    for engine, (low, high) in marginal.items():
        print(
            f"  {engine}: {low * 1e3:.3f} ms per step from 60 to 1,000, {high * 1e3:.3f} ms from"
            f" 1,000 to 4,000 — ratio {high / low:.2f} (target ≤ 1.5)"
        )
    kahn, lang = marginal["kahn"], marginal["langgraph"]
    print(
        f"  LangGraph / Kahn, marginal cost per step: {lang[0] / kahn[0]:.1f}x from 60 to 1,000,"
        f" {lang[1] / kahn[1]:.1f}x from 1,000 to 4,000 (target ≥ 10)"
    )


if __name__ == "__main__":
    main()
