"""Kahn engine benchmarks (printed, never asserted).

1. Makespan of random 200-step DAGs whose steps sleep 10–50 ms, divided by the
   critical path — the physical limit with unlimited parallelism. Target ≤ 1.02.
   Two critical paths are printed side by side: the *nominal* one, from the
   planned sleeps, and the *measured* one, from each step's own duration in
   that very run (``StepFinished.duration_s``). They differ by what
   ``asyncio.sleep`` overshoots: the event loop's selector rounds its timeout
   up to whole milliseconds (epoll), so every sleep lasts ~0.5–1 ms longer than
   asked, before any scheduling happens — a floor no scheduler can go under.
   The nominal critical path slept back to back with no engine at all shows
   that floor; makespan / measured critical path is the scheduler's own share.
2. Scheduling overhead per step: zero-work steps with no ``when``, wall time
   divided by steps, with the in-memory store (target ≤ 100 µs) and with the
   durable SQLite store.

Every sample starts from a collected heap (``gc.collect()``): a run's state and
store are freed by the cycle collector, and a collection of the previous
sample's garbage must not be charged to the next one. Collections caused by the
run itself still count.
"""
from __future__ import annotations

import asyncio
import gc
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import engine.demo_steps  # noqa: F401 - registers demo.sleep and demo.echo
from engine.events import StepFinished
from engine.graph import WorkflowGraph
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.spec import Limits, StepSpec, WorkflowDefinition
from engine.states import RunStatus
from engine.store import BaseRunStore, InMemoryRunStore, RunStore

OVERHEAD_SAMPLES = 5


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


async def timed_run(wf: WorkflowDefinition, store: BaseRunStore, run_id: str | None = None) -> float:
    started = time.perf_counter()
    result = await KahnEngine().execute(wf, RunContext(store=store, run_id=run_id))
    elapsed = time.perf_counter() - started
    if result.status != RunStatus.COMPLETED:
        raise RuntimeError(f"benchmark run ended {result.status.value}: {result.reason}")
    return elapsed


async def slept_back_to_back(seconds: list[float]) -> float:
    """Wall time of these sleeps one after the other, no engine: the loop's own floor."""
    started = time.perf_counter()
    for duration in seconds:
        await asyncio.sleep(duration)
    return time.perf_counter() - started


@dataclass(frozen=True)
class MakespanRow:
    steps_on_path: int
    nominal: float
    measured: float
    bare: float
    makespan: float
    overshoot: float
    """Mean of (measured − planned duration) over every step of the run."""


def measure_makespan(seed: int) -> MakespanRow:
    wf = random_dag(200, seed, "demo.sleep", (0.010, 0.050))
    planned = {s.id: float(s.config["seconds"]) for s in wf.steps}
    graph = WorkflowGraph(wf)
    nominal, path = graph.critical_path(planned)
    store = InMemoryRunStore()
    gc.collect()
    elapsed = asyncio.run(timed_run(wf, store, run_id=f"makespan-{seed}"))
    measured_s = {
        event.step_id: event.duration_s
        for event in store.events(f"makespan-{seed}") if isinstance(event, StepFinished)
    }
    measured, _ = graph.critical_path(measured_s)
    bare = asyncio.run(slept_back_to_back([planned[step_id] for step_id in path]))
    overshoot = statistics.mean(measured_s[s] - planned[s] for s in measured_s)
    return MakespanRow(len(path), nominal, measured, bare, elapsed, overshoot)


def makespan() -> None:
    print("makespan / critical path — 200 steps sleeping 10–50 ms (target ≤ 1.02)")
    print("  nominal: critical path of the planned sleeps; measured: the same DAG's critical path of each")
    print("  step's measured duration in this run (the physical limit of the run); bare: the nominal")
    print("  critical path's sleeps awaited back to back with no engine")
    rows = [measure_makespan(seed) for seed in range(3)]
    for seed, row in enumerate(rows):
        print(f"  dag {seed}: {row.steps_on_path:2d} steps on the path; critical path nominal {row.nominal * 1000:7.1f} ms,"
              f" measured {row.measured * 1000:7.1f} ms, bare {row.bare * 1000:7.1f} ms; makespan {row.makespan * 1000:7.1f}"
              f" ms; ratio nominal {row.makespan / row.nominal:.3f}, measured {row.makespan / row.measured:.3f}")
    print(f"  mean ratio: nominal {statistics.mean(r.makespan / r.nominal for r in rows):.3f},"
          f" measured {statistics.mean(r.makespan / r.measured for r in rows):.3f};"
          f" bare sleeps / nominal {statistics.mean(r.bare / r.nominal for r in rows):.3f}")
    print(f"  each asyncio.sleep overshot by {statistics.mean(r.overshoot for r in rows) * 1000:.2f} ms on average:"
          " the selector rounds its timeout up to whole milliseconds, so the bare")
    print("  sleeps alone already exceed the nominal path by that much per step; no scheduler can go under")
    print("  the bare ratio, and makespan / measured critical path is the scheduler's own share")


def overhead() -> None:
    print("scheduling overhead per zero-work step, no `when` (target ≤ 100 µs in memory)")
    size = 1000
    wf = random_dag(size, 7, "demo.echo", None)
    asyncio.run(timed_run(random_dag(50, 1, "demo.echo", None), InMemoryRunStore()))
    for label in ("in-memory store", "SQLite store (WAL, synchronous=NORMAL)"):
        samples = []
        for _ in range(OVERHEAD_SAMPLES):
            with tempfile.TemporaryDirectory() as folder:
                store: BaseRunStore = InMemoryRunStore() if label.startswith("in-memory") else RunStore(
                    Path(folder) / "runs.sqlite")
                gc.collect()
                samples.append(asyncio.run(timed_run(wf, store)))
                store.close()
        best, median = min(samples), statistics.median(samples)
        print(f"  {label:40s}: {best / size * 1e6:7.1f} µs per step best, {median / size * 1e6:7.1f} median"
              f" ({size} steps, {OVERHEAD_SAMPLES} runs)")


def main() -> None:
    makespan()
    overhead()


if __name__ == "__main__":
    main()
