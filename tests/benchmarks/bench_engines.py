"""Kahn vs LangGraph on the same random DAG suite (ADR-001: BSP supersteps lose parallelism).

For each DAG of steps that sleep a random while (no model, no I/O):

* makespan — wall time of the run on each engine;
* critical path — the longest dependency chain of the planned durations, the
  lower bound of any scheduler with unlimited parallelism;
* makespan / critical path per engine, and the LangGraph/Kahn makespan ratio;
* the BSP bound — the makespan of ideal supersteps (each level waits for its
  slowest step), what LangGraph's model predicts before any overhead.

Then the per-step overhead of each engine: zero-work steps in a chain and in a
wide fan-out, wall time divided by the number of steps. Figures are printed,
never asserted. ``python -m tests.benchmarks engines``.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from typing import Any

from engine import demo_steps  # noqa: F401 - registers the demo steps
from engine.graph import WorkflowGraph
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow_text
from engine.protocol import RunContext
from engine.spec import WorkflowDefinition
from engine.states import RunStatus
from engine.store import InMemoryRunStore
from tests.engine.langgraph_cases import DagCase, random_case

SEED = 20240601
DAGS = 12
SIZE = 24
EDGE_PROBABILITY = 0.15
STEP_SLEEP_S = 0.03
OVERHEAD_STEPS = 60


async def timed_run(engine: Any, wf: WorkflowDefinition) -> float:
    store = InMemoryRunStore()
    started = time.perf_counter()
    result = await engine.execute(wf, RunContext(store=store))
    elapsed = time.perf_counter() - started
    if result.status != RunStatus.COMPLETED:
        raise RuntimeError(f"{engine.name}: {result.status.value} {result.reason}")
    return elapsed


def bsp_bound(case: DagCase) -> float:
    """Supersteps by depth: each level ends when its slowest step ends."""
    depth: dict[int, int] = {}
    for index in range(case.size):
        depth[index] = 1 + max((depth[d] for d in case.deps[index]), default=-1)
    levels: dict[int, float] = {}
    for index, level in depth.items():
        levels[level] = max(levels.get(level, 0.0), case.sleep_s[index])
    return sum(levels.values())


async def dag_suite() -> list[dict[str, float]]:
    rng = random.Random(SEED)
    rows = []
    for _ in range(DAGS):
        case = random_case(rng, SIZE, EDGE_PROBABILITY, STEP_SLEEP_S)
        wf = case.workflow()
        graph = WorkflowGraph(wf)
        critical, _ = graph.critical_path({case.step_id(i): s for i, s in case.sleep_s.items()})
        kahn = await timed_run(KahnEngine(), wf)
        lang = await timed_run(LangGraphEngine(), wf)
        rows.append(
            {
                "critical": critical,
                "bsp": bsp_bound(case),
                "kahn": kahn,
                "langgraph": lang,
                "work": sum(case.sleep_s.values()),
            }
        )
    return rows


def zero_work(shape: str, size: int) -> WorkflowDefinition:
    steps: list[dict[str, Any]] = [{"id": "s0", "uses": "demo.echo"}]
    for index in range(1, size):
        parent = f"s{index - 1}" if shape == "chain" else "s0"
        steps.append({"id": f"s{index}", "uses": "demo.echo", "depends_on": [parent]})
    return load_workflow_text(
        json.dumps({"name": f"{shape}_{size}", "steps": steps}), source=f"{shape}.yaml"
    )


async def overhead() -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = {}
    for shape in ("chain", "fan_out"):
        wf = zero_work(shape, OVERHEAD_STEPS)
        figures[shape] = {}
        for engine in (KahnEngine(), LangGraphEngine()):
            await timed_run(engine, wf)  # warm up imports and caches
            samples = [await timed_run(type(engine)(), wf) for _ in range(3)]
            figures[shape][engine.name] = statistics.median(samples) / OVERHEAD_STEPS
    return figures


def main() -> None:
    rows = asyncio.run(dag_suite())
    print(
        f"random DAG suite: {DAGS} DAGs x {SIZE} steps, edge p={EDGE_PROBABILITY}, "
        f"~{STEP_SLEEP_S * 1000:.0f} ms per step, seed {SEED}"
    )
    print(
        f"{'dag':>4} {'work s':>7} {'crit s':>7} {'bsp s':>7} {'kahn s':>7} {'lg s':>7} "
        f"{'kahn/crit':>9} {'lg/crit':>8} {'lg/kahn':>8}"
    )
    for index, row in enumerate(rows):
        print(
            f"{index:>4} {row['work']:7.3f} {row['critical']:7.3f} {row['bsp']:7.3f} {row['kahn']:7.3f} "
            f"{row['langgraph']:7.3f} {row['kahn'] / row['critical']:9.2f} {row['langgraph'] / row['critical']:8.2f} "
            f"{row['langgraph'] / row['kahn']:8.2f}"
        )
    mean = {key: statistics.mean(row[key] for row in rows) for key in rows[0]}
    ratio = statistics.geometric_mean([row["langgraph"] / row["kahn"] for row in rows])
    print(
        f"mean makespan: kahn {mean['kahn']:.3f} s, langgraph {mean['langgraph']:.3f} s; "
        f"critical path {mean['critical']:.3f} s, BSP bound {mean['bsp']:.3f} s"
    )
    print(
        f"makespan / critical path: kahn {mean['kahn'] / mean['critical']:.2f}, "
        f"langgraph {mean['langgraph'] / mean['critical']:.2f} (BSP bound {mean['bsp'] / mean['critical']:.2f})"
    )
    print(f"LangGraph/Kahn makespan ratio (geometric mean): {ratio:.2f}")
    figures = asyncio.run(overhead())
    for shape, by_engine in figures.items():
        print(
            f"per-step overhead, zero-work {shape} of {OVERHEAD_STEPS}: "
            + ", ".join(f"{name} {seconds * 1000:.2f} ms" for name, seconds in by_engine.items())
        )


if __name__ == "__main__":
    main()
