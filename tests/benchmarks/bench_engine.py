"""Kahn engine benchmarks (printed, never asserted).

1. Makespan of random 200-step DAGs whose steps sleep 10–50 ms, divided by the
   critical path of the same durations — the physical limit with unlimited
   parallelism. Target ≤ 1.02.
2. Scheduling overhead per step: zero-work steps with no ``when``, wall time
   divided by steps, with the in-memory store (target ≤ 100 µs) and with the
   durable SQLite store.
"""
from __future__ import annotations

import asyncio
import random
import tempfile
import time
from pathlib import Path

import engine.demo_steps  # noqa: F401 - registers demo.sleep and demo.echo
from engine.graph import WorkflowGraph
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.spec import Limits, StepSpec, WorkflowDefinition
from engine.states import RunStatus
from engine.store import BaseRunStore, InMemoryRunStore, RunStore


def random_dag(size: int, seed: int, uses: str, sleep_range: tuple[float, float] | None) -> WorkflowDefinition:
    """Each step depends on up to three of the twenty steps declared just before it."""
    rng = random.Random(seed)
    steps = []
    for index in range(size):
        earlier = list(range(max(0, index - 20), index))
        deps = sorted(rng.sample(earlier, k=min(len(earlier), rng.randint(0, 3))))
        config = {"seconds": round(rng.uniform(*sleep_range), 4)} if sleep_range else {}
        steps.append(StepSpec(id=f"s{index}", uses=uses, depends_on=[f"s{d}" for d in deps], config=config))
    return WorkflowDefinition(name=f"bench_{seed}", steps=steps, limits=Limits(timeout_s=600))


async def timed_run(wf: WorkflowDefinition, store: BaseRunStore) -> float:
    started = time.perf_counter()
    result = await KahnEngine().execute(wf, RunContext(store=store))
    elapsed = time.perf_counter() - started
    if result.status != RunStatus.COMPLETED:
        raise RuntimeError(f"benchmark run ended {result.status.value}: {result.reason}")
    return elapsed


def makespan() -> None:
    print("makespan / critical path — 200 steps sleeping 10–50 ms (target ≤ 1.02)")
    ratios = []
    for seed in range(3):
        wf = random_dag(200, seed, "demo.sleep", (0.010, 0.050))
        durations = {s.id: float(s.config["seconds"]) for s in wf.steps}
        critical, path = WorkflowGraph(wf).critical_path(durations)
        elapsed = asyncio.run(timed_run(wf, InMemoryRunStore()))
        ratios.append(elapsed / critical)
        print(f"  dag {seed}: critical path {critical * 1000:7.1f} ms over {len(path):2d} steps, "
              f"makespan {elapsed * 1000:7.1f} ms, ratio {elapsed / critical:.3f}")
    print(f"  mean ratio {sum(ratios) / len(ratios):.3f}")


def overhead() -> None:
    print("scheduling overhead per zero-work step, no `when` (target ≤ 100 µs in memory)")
    size = 1000
    wf = random_dag(size, 7, "demo.echo", None)
    asyncio.run(timed_run(random_dag(50, 1, "demo.echo", None), InMemoryRunStore()))
    for label in ("in-memory store", "SQLite store (WAL, synchronous=NORMAL)"):
        best = float("inf")
        for _ in range(3):
            with tempfile.TemporaryDirectory() as folder:
                store: BaseRunStore = InMemoryRunStore() if label.startswith("in-memory") else RunStore(
                    Path(folder) / "runs.sqlite")
                best = min(best, asyncio.run(timed_run(wf, store)))
                store.close()
        print(f"  {label:40s}: {best / size * 1e6:7.1f} µs per step ({size} steps, best of 3)")


def main() -> None:
    makespan()
    overhead()


if __name__ == "__main__":
    main()
