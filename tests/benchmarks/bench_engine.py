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
   of the whole run divided by its steps (best and median of n runs) and the
   CPU time the process spent on it (median): on a machine shared with other
   work, wall time mostly measures waiting for a core, CPU time much less, at 60, 1,000 and 10,000 steps, in a
   chain and in a random DAG: Kahn with the in-memory store (target ≤ 100 µs,
   flat from 60 to 10,000) and with the durable SQLite store, and LangGraph
   (in memory) beside them (target: ≥ 10x Kahn's). LangGraph is timed at
   10,000 steps from one step's start to another's (:func:`windowed`), its
   graph's building left out (it takes a while for 10,000 nodes): in the chain
   (one step a superstep) over 500 steps, after which the run is cancelled (a
   whole run takes much longer); in the random DAG from the first step to the
   last — a quarter of its steps depend on none and many become ready together,
   so a window of 500 steps would fall inside one superstep's node calls and
   leave out the checkpoints between supersteps.

With ``BENCH_COMPARE_WITH=<tree>`` (another commit's source tree, e.g. a detached worktree of
main) the Kahn cells of the overhead table are measured on that tree's engine too, in the same
run, each right after this tree's (a child process runs this file with that tree first on its
path: the same benchmark code over the other engine), and the before / after CPU ratio is
printed beside them.

Every sample starts from a collected heap (``gc.collect()``): a run's state and
store are freed by the cycle collector, and a collection of the previous
sample's garbage must not be charged to the next one. Collections caused by the
run itself still count.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import engine.demo_steps  # noqa: F401 - registers demo.sleep and demo.echo
from engine.context import StepContext
from engine.events import StepFinished
from engine.graph import WorkflowGraph
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.lifecycle import EngineBase
from engine.protocol import RunContext
from engine.spec import Limits, StepSpec, WorkflowDefinition
from engine.states import RunStatus
from engine.steps import AnyInput, AnyOutput, step
from engine.store import BaseRunStore, InMemoryRunStore, RunStore


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


OVERHEAD_SIZES = (60, 1_000, 10_000)
OVERHEAD_RUNS = {60: 15, 1_000: 5, 10_000: 2}
"""Runs per size (the best and the median are printed): fewer where one run is long."""
LANGGRAPH_WINDOW = 500
"""Steps LangGraph is timed over in the 10,000-step chain (see :func:`windowed`)."""
LANGGRAPH_WINDOW_START = 200
"""Steps run before LangGraph's window opens in the chain: its graph is running by then."""


def chain(size: int, uses: str = "demo.echo") -> WorkflowDefinition:
    steps = [StepSpec(id="s0", uses=uses)]
    steps += [StepSpec(id=f"s{i}", uses=uses, depends_on=[f"s{i - 1}"]) for i in range(1, size)]
    return WorkflowDefinition(name=f"chain_{size}", steps=steps, limits=Limits(timeout_s=3600))


Timing = tuple[float, float]
"""(wall seconds, CPU seconds of this process)."""


def now() -> Timing:
    return time.perf_counter(), time.process_time()


def since(started: Timing) -> Timing:
    wall, cpu = now()
    return wall - started[0], cpu - started[1]


async def engine_run(engine: EngineBase, wf: WorkflowDefinition, store: BaseRunStore) -> Timing:
    """Wall and CPU seconds of one whole run (start, every step, the end) on ``engine``."""
    started = now()
    result = await engine.execute(wf, RunContext(store=store))
    elapsed = since(started)
    if result.status != RunStatus.COMPLETED:
        raise RuntimeError(f"benchmark run ended {result.status.value}: {result.reason}")
    return elapsed


class _Ticks:
    """Times the steps of a windowed run reach, and the engine to cancel after its window."""

    engine: EngineBase | None = None
    run_id = ""
    stop_after = 0
    times: list[Timing] = []


@step("bench.tick")
async def tick(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """A zero-work step that notes when it ran; the window's last one cancels the run."""
    _Ticks.times.append(now())
    if len(_Ticks.times) == _Ticks.stop_after and _Ticks.engine is not None:
        _Ticks.engine.cancel(_Ticks.run_id)
    return AnyOutput()


async def windowed(
    engine: EngineBase, wf: WorkflowDefinition, store: BaseRunStore, opens: int, closes: int
) -> Timing:
    """Wall and CPU seconds per step from the start of step number ``opens`` to that of
    step number ``closes``, in a run of ``wf`` (of ``bench.tick`` steps), which is then
    cancelled unless ``closes`` is its last step: the marginal cost per step at that
    workflow's size, its graph's building left out."""
    last = closes == len(wf.steps) - 1
    _Ticks.engine, _Ticks.run_id, _Ticks.times = engine, f"window-{len(wf.steps)}", []
    _Ticks.stop_after = 0 if last else closes + 1
    result = await engine.execute(wf, RunContext(store=store, run_id=_Ticks.run_id))
    expected = RunStatus.COMPLETED if last else RunStatus.CANCELLED
    if result.status != expected or len(_Ticks.times) <= closes:
        raise RuntimeError(f"windowed run ended {result.status.value}: {result.reason}")
    (wall_0, cpu_0), (wall_1, cpu_1) = _Ticks.times[opens], _Ticks.times[closes]
    return (wall_1 - wall_0) / (closes - opens), (cpu_1 - cpu_0) / (closes - opens)


@dataclass(frozen=True)
class OverheadCell:
    best: float
    median: float
    cpu: float
    """The median CPU seconds per step."""
    note: str = ""


def per_step(runs: int, size: int, sample: Callable[[], Timing]) -> OverheadCell:
    walls, cpus = [], []
    for _ in range(runs):
        gc.collect()
        wall, cpu = sample()
        walls.append(wall / size)
        cpus.append(cpu / size)
    return OverheadCell(min(walls), statistics.median(walls), statistics.median(cpus))


def kahn_cell(wf: WorkflowDefinition, sqlite: bool) -> OverheadCell:
    size = len(wf.steps)

    def sample() -> Timing:
        with tempfile.TemporaryDirectory() as folder:
            store: BaseRunStore = (
                RunStore(Path(folder) / "runs.sqlite") if sqlite else InMemoryRunStore()
            )
            try:
                return asyncio.run(engine_run(KahnEngine(), wf, store))
            finally:
                store.close()

    return per_step(OVERHEAD_RUNS[size], size, sample)


def langgraph_cell(wf: WorkflowDefinition, shape: str) -> OverheadCell:
    size = len(wf.steps)
    if size < 10_000:
        return per_step(
            OVERHEAD_RUNS[size],
            size,
            lambda: asyncio.run(engine_run(LangGraphEngine(), wf, InMemoryRunStore())),
        )
    if shape == "chain":
        ticking = chain(size, "bench.tick")
        opens, closes = LANGGRAPH_WINDOW_START, LANGGRAPH_WINDOW_START + LANGGRAPH_WINDOW
    else:
        ticking, opens, closes = random_dag(size, 7, "bench.tick", None), 0, size - 1
    gc.collect()
    wall, cpu = asyncio.run(windowed(LangGraphEngine(), ticking, InMemoryRunStore(), opens, closes))
    return OverheadCell(wall, wall, cpu, "window")


COMPARE_WITH = "BENCH_COMPARE_WITH"
"""An environment variable naming another source tree whose Kahn engine is measured beside
this one's."""


def kahn_cells(shape: str, size: int) -> tuple[OverheadCell, OverheadCell]:
    """Kahn's cells (in memory, SQLite) for one workflow of the overhead table."""
    wf = chain(size) if shape == "chain" else random_dag(size, 7, "demo.echo", None)
    return kahn_cell(wf, sqlite=False), kahn_cell(wf, sqlite=True)


def kahn_cells_of(tree: str, shape: str, size: int) -> tuple[OverheadCell, OverheadCell]:
    """:func:`kahn_cells` measured on the engine of another source tree, in a child process
    that runs this file with that tree first on its path."""
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run(
        [sys.executable, __file__, "kahn-cells", shape, str(size)],
        env=env,
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    )
    memory, sqlite = json.loads(done.stdout.strip().splitlines()[-1])
    return OverheadCell(*memory), OverheadCell(*sqlite)


def overhead() -> None:
    print(
        "scheduling overhead per zero-work step, µs (whole run / steps; wall: best of n runs and"
        " median; CPU: median): target for Kahn in memory ≤ 100 µs at every size, flat within"
        " 1.5x from 60 to 10,000, ≥ 10x below LangGraph"
    )
    other = os.environ.get(COMPARE_WITH)
    warm_up()
    asyncio.run(engine_run(LangGraphEngine(), chain(50), InMemoryRunStore()))
    before: list[str] = []
    for shape in ("chain", "random DAG"):
        print(
            f"  {shape:<10} {'steps':>6}  {'Kahn memory':>26}  {'Kahn SQLite':>26}"
            f"  {'LangGraph memory':>26}  {'LG / Kahn wall, CPU':>19}"
        )
        print(f"  {'':<17}" + f"  {'best':>8} {'median':>8} {'CPU':>8}" * 3)
        in_memory: list[OverheadCell] = []
        for size in OVERHEAD_SIZES:
            wf = chain(size) if shape == "chain" else random_dag(size, 7, "demo.echo", None)
            memory, sqlite = kahn_cells(shape, size)
            if other:
                old_memory, old_sqlite = kahn_cells_of(other, shape, size)
                before.append(
                    f"  {shape:<10} {size:>6}  {old_memory.cpu * 1e6:8.1f} {memory.cpu * 1e6:8.1f}"
                    f" {old_memory.cpu / memory.cpu:8.2f}x  {old_sqlite.cpu * 1e6:8.1f}"
                    f" {sqlite.cpu * 1e6:8.1f} {old_sqlite.cpu / sqlite.cpu:8.2f}x"
                )
            lang = langgraph_cell(wf, shape)
            in_memory.append(memory)
            print(
                f"  {'':<10} {size:>6}  {_cell(memory)}  {_cell(sqlite)}  {_cell(lang)}"
                f"  {lang.best / memory.best:8.1f}x {lang.cpu / memory.cpu:8.1f}x"
            )
        first, last = in_memory[0], in_memory[-1]
        print(
            f"  {'':<10} Kahn in memory, 10,000 / 60 steps: {last.best / first.best:.2f}x best,"
            f" {last.median / first.median:.2f}x median, {last.cpu / first.cpu:.2f}x CPU"
        )
    print(
        "  (*: LangGraph at 10,000 steps is timed from one step's start to another's, its graph's"
        f" building left out: in the chain over {LANGGRAPH_WINDOW} steps from its"
        f" {LANGGRAPH_WINDOW_START}th, the run then cancelled; in the random DAG from the first"
        " step to the last"
    )
    print(
        "  — its marginal cost per step at that size; every other figure is a whole run, start"
        " and end included)"
    )
    if other:
        print(f"  Kahn, CPU µs per step (median), before: {other}; after: this tree")
        print(f"  {'':<17}  {'memory before':>17} {'after':>8} {'ratio':>9}", end="")
        print(f"  {'SQLite before':>17} {'after':>8} {'ratio':>9}")
        print("\n".join(before))


def warm_up() -> None:
    """Imports and caches, before anything is timed."""
    asyncio.run(engine_run(KahnEngine(), chain(50), InMemoryRunStore()))


def _cell(cell: OverheadCell) -> str:
    if cell.note:
        return f"{cell.best * 1e6:8.0f}*{'':>8} {cell.cpu * 1e6:8.0f}"
    return f"{cell.best * 1e6:8.1f} {cell.median * 1e6:8.1f} {cell.cpu * 1e6:8.1f}"


def main() -> None:
    makespan()
    overhead()


if __name__ == "__main__":
    if sys.argv[1:2] == ["kahn-cells"]:  # run by kahn_cells_of, on another tree's engine
        warm_up()
        cells = kahn_cells(sys.argv[2], int(sys.argv[3]))
        print(json.dumps([[cell.best, cell.median, cell.cpu] for cell in cells]))
    else:
        main()
