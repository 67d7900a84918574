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
   The same DAGs are run once more on an event loop whose selector waits with
   microsecond resolution (``selectors.SelectSelector``), where the nominal
   ratio shows the engine without the millisecond rounding.
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
import selectors
import statistics
import tempfile
import time
from collections.abc import Callable
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


def random_dag(
    size: int, seed: int, uses: str, sleep_range: tuple[float, float] | None
) -> WorkflowDefinition:
    """Each step depends on up to three of the twenty steps declared just before it."""
    rng = random.Random(seed)
    steps = []
    for index in range(size):
        earlier = list(range(max(0, index - 20), index))
        deps = sorted(rng.sample(earlier, k=min(len(earlier), rng.randint(0, 3))))
        config = {"seconds": round(rng.uniform(*sleep_range), 4)} if sleep_range else {}
        steps.append(
            StepSpec(id=f"s{index}", uses=uses, depends_on=[f"s{d}" for d in deps], config=config)
        )
    return WorkflowDefinition(name=f"bench_{seed}", steps=steps, limits=Limits(timeout_s=600))


async def timed_run(
    wf: WorkflowDefinition, store: BaseRunStore, run_id: str | None = None
) -> float:
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
    fine_makespan: float
    """The makespan on an event loop whose selector has microsecond timeouts."""
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
        for event in store.events(f"makespan-{seed}")
        if isinstance(event, StepFinished)
    }
    measured, _ = graph.critical_path(measured_s)
    bare = asyncio.run(slept_back_to_back([planned[step_id] for step_id in path]))
    overshoot = statistics.mean(measured_s[s] - planned[s] for s in measured_s)
    fine_loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
    try:
        gc.collect()
        fine = fine_loop.run_until_complete(timed_run(wf, InMemoryRunStore()))
    finally:
        fine_loop.close()
    return MakespanRow(len(path), nominal, measured, bare, elapsed, fine, overshoot)


def makespan() -> None:
    print("makespan / critical path — 200 steps sleeping 10–50 ms (target ≤ 1.02)")
    rows = [measure_makespan(seed) for seed in range(3)]
    print(
        f"  {'dag':>3} {'path':>4} {'nominal':>8} {'measured':>8} {'bare':>7} {'makespan':>8}"
        f" {'/nominal':>8} {'/measured':>9} {'µs-loop/nominal':>15}"
    )
    for seed, row in enumerate(rows):
        print(
            f"  {seed:>3} {row.steps_on_path:>4} {row.nominal * 1000:8.1f} {row.measured * 1000:8.1f}"
            f" {row.bare * 1000:7.1f} {row.makespan * 1000:8.1f} {row.makespan / row.nominal:8.3f}"
            f" {row.makespan / row.measured:9.3f} {row.fine_makespan / row.nominal:15.3f}"
        )

    def mean(ratio: Callable[[MakespanRow], float]) -> float:
        return statistics.mean(ratio(row) for row in rows)

    print(
        f"  mean: makespan / nominal critical path {mean(lambda r: r.makespan / r.nominal):.3f},"
        f" / measured critical path {mean(lambda r: r.makespan / r.measured):.3f};"
        f" bare sleeps / nominal {mean(lambda r: r.bare / r.nominal):.3f};"
        f" on the microsecond loop {mean(lambda r: r.fine_makespan / r.nominal):.3f}"
    )
    print(
        "  (ms; path: steps on the nominal critical path; nominal: its planned sleeps; measured: the critical"
    )
    print(
        "  path of each step's measured duration in this run, the run's physical limit; bare: the nominal"
    )
    print(
        "  path's sleeps awaited back to back with no engine; µs-loop: the run on an event loop whose selector"
    )
    print("  has microsecond timeouts, selectors.SelectSelector)")
    print(
        f"  asyncio.sleep overshot by {mean(lambda r: r.overshoot) * 1000:.2f} ms per step on average: the default"
        " selector (epoll) rounds its timeout up"
    )
    print(
        "  to whole milliseconds, so the bare sleeps alone exceed the nominal path before any scheduling —"
    )
    print(
        "  no scheduler goes under that; makespan / measured critical path is the scheduler's own share"
    )


def overhead() -> None:
    print("scheduling overhead per zero-work step, no `when` (target ≤ 100 µs in memory)")
    size = 1000
    wf = random_dag(size, 7, "demo.echo", None)
    asyncio.run(timed_run(random_dag(50, 1, "demo.echo", None), InMemoryRunStore()))
    for label in ("in-memory store", "SQLite store (WAL, synchronous=NORMAL)"):
        samples = []
        for _ in range(OVERHEAD_SAMPLES):
            with tempfile.TemporaryDirectory() as folder:
                store: BaseRunStore = (
                    InMemoryRunStore()
                    if label.startswith("in-memory")
                    else RunStore(Path(folder) / "runs.sqlite")
                )
                gc.collect()
                samples.append(asyncio.run(timed_run(wf, store)))
                store.close()
        best, median = min(samples), statistics.median(samples)
        print(
            f"  {label:40s}: {best / size * 1e6:7.1f} µs per step best, {median / size * 1e6:7.1f} median"
            f" ({size} steps, {OVERHEAD_SAMPLES} runs)"
        )


def main() -> None:
    makespan()
    overhead()


if __name__ == "__main__":
    main()
