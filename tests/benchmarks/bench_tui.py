"""TUI benchmarks: event ingestion under load, DAG layout and render, start-up to first frame,
opening a stored run, and replay steps late in a long run.

Figures are measured side by side in one run and printed; nothing is asserted about time.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import networkx as nx
from textual import events
from textual.pilot import Pilot

from engine.events import (
    GraphEdge,
    GraphNode,
    Log,
    RunEvent,
    RunStarted,
    StepFinished,
    StepStarted,
)
from engine.protocol import ExecutionResult, InterruptResponder
from engine.states import RunStatus
from engine.store import InMemoryRunStore, RunStore
from tests.tools.sample_run import definition_for, research_graph
from tui.app.app import WorkbenchApp
from tui.app.run_state import CHECKPOINT_EVERY, NEAR_EVERY, ReplayFold, RunView
from tui.app.screens.home import HomeScreen
from tui.app.screens.run import RunScreen
from tui.app.widgets.dag_layout import compute_layout
from tui.app.widgets.dag_view import DagView
from tui.launch.run_driver import EventInbox
from tui.launch.workbench import Workbench
from tui.launch.workspace import Workspace

RATE = 1000
KEY_INTERVAL_S = 0.08
KEYPRESSES = 30


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def flood_job(rate: int, stop: threading.Event, seconds: float = 60.0) -> object:
    """A run that appends ``rate`` real events per second to a store until ``stop`` is set (or
    ``seconds`` have passed)."""

    async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
        store = InMemoryRunStore()
        nodes, edges = research_graph()
        definition_nodes = [n.id for n in nodes]
        unsubscribe = store.subscribe(inbox.put)
        run_id = store.create_run(definition_for(nodes, edges), {}, "kahn", "bench", run_id="bench")
        store.append(run_started(run_id, nodes, edges))
        started, sent, tick = time.perf_counter(), 0, 0.01
        while not stop.is_set() and time.perf_counter() - started < seconds:
            due = int((time.perf_counter() - started) * rate)
            while sent < due:
                store.append(step_event(run_id, definition_nodes, sent))
                sent += 1
            await asyncio.sleep(tick)
        unsubscribe()
        return ExecutionResult(run_id=run_id, status=RunStatus.COMPLETED)

    return job


def run_started(run_id: str, nodes: list[GraphNode], edges: list[GraphEdge]) -> RunStarted:
    """The synthetic bench run's first event."""
    return RunStarted(
        run_id=run_id,
        workflow="bench",
        source="-",
        engine="kahn",
        engine_reason="bench",
        nodes=nodes,
        edges=edges,
    )


def step_event(run_id: str, step_ids: list[str], index: int) -> RunEvent:
    """The ``index``-th event of a synthetic busy run: steps start, finish and log in turn."""
    step_id = step_ids[index % len(step_ids)]
    kind = index % 3
    if kind == 0:
        return StepStarted(run_id=run_id, step_id=step_id)
    if kind == 1:
        return StepFinished(run_id=run_id, step_id=step_id, tokens=index, duration_s=0.1)
    return Log(run_id=run_id, message=f"event {index}", step_id=step_id)


def store_run(workspace: Path, run_id: str, events: int) -> None:
    """A stored run of ``events`` events (its run_started first) in the workspace's run store."""
    nodes, edges = research_graph()
    step_ids = [n.id for n in nodes]
    with RunStore(Workspace(workspace).runs_db) as store:
        store.create_run(definition_for(nodes, edges), {}, "kahn", "bench", run_id=run_id)
        with store.batch():
            store.append(run_started(run_id, nodes, edges))
            for index in range(events - 1):
                store.append(step_event(run_id, step_ids, index))


STORED_EVENTS = 1000
LONG_RUN_EVENTS = 20_000
REPLAY_STEPS = 20


async def bench_stored_runs() -> None:
    """Opening a stored run, and stepping back through the end of a long one: the replay fold
    from the nearest checkpoint against refolding from event 0 (what every step back did before
    checkpoints), side by side on the same screen."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        store_run(workspace, "stored", STORED_EVENTS)
        store_run(workspace, "long", LONG_RUN_EVENTS)
        app = WorkbenchApp(Workbench(workspace=workspace, shipped_dir=workspace / "none"))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            started = time.perf_counter()
            screen = app.open_run("stored")
            await painted(pilot, lambda: app.screen is screen)
            open_s = time.perf_counter() - started
            assert isinstance(screen, RunScreen) and screen.position == STORED_EVENTS
            app.pop_screen()
            await pilot.pause()
            screen = app.open_run("long")
            await pilot.pause()
            assert isinstance(screen, RunScreen)
            wall: dict[str, list[float]] = {}
            cpu: dict[str, list[float]] = {}
            folds = {
                FROM_ZERO: ReplayFold(screen.events, every=len(screen.events) + 1, near=None),
                SPARSE: ReplayFold(screen.events, near=None),
                NEAR: ReplayFold(screen.events),
            }
            for label, fold in folds.items():
                screen._replay = fold
                screen.seek(len(screen.events))
                await pilot.pause()
                for _ in range(REPLAY_STEPS):
                    started, started_cpu = time.perf_counter(), time.process_time()
                    back = partial(at_position, screen, screen.position - 1)
                    app.post_message(events.Key("comma", None))
                    await painted(pilot, back)
                    wall.setdefault(label, []).append(time.perf_counter() - started)
                    cpu.setdefault(label, []).append(time.process_time() - started_cpu)
    print(
        f"opening a stored {STORED_EVENTS}-event run: {open_s * 1000:.0f} ms to the run screen's "
        "first frame"
    )

    def p50(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.1f} ms"

    print(
        f"replay, {REPLAY_STEPS} steps back from event {LONG_RUN_EVENTS} of a {LONG_RUN_EVENTS}-event "
        "run, key press to repaint (wall p50 / CPU p50 of this process, ratio to refolding from "
        "event 0):"
    )
    base = statistics.median(wall[FROM_ZERO])
    for label in folds:
        print(
            f"  {label:<46} {p50(wall[label]):>9} / {p50(cpu[label]):>9}"
            f"  ({base / statistics.median(wall[label]):.1f}x)"
        )


FROM_ZERO = "refold from event 0"
SPARSE = f"from the checkpoint every {CHECKPOINT_EVERY} events"
NEAR = f"+ checkpoints every {NEAR_EVERY} near the cursor"


def at_position(screen: RunScreen, position: int) -> bool:
    return screen.position == position


async def painted(pilot: Pilot[None], changed: Callable[[], bool]) -> None:
    """Return once ``changed()`` holds and the screen has drawn what changed.

    Pilot's ``press`` and ``pause`` also wait until the process looks idle, in steps of 20 ms;
    that would put a floor of 40 ms under every figure, so this waits for the frame instead.
    """
    while not changed():
        await asyncio.sleep(0.0005)
    await pilot._wait_for_screen()
    screen = pilot.app.screen
    while screen._layout_required or screen._repaint_required or screen._dirty_widgets:
        await asyncio.sleep(0.0005)


async def key_to_repaint(app: WorkbenchApp, dag: DagView, key: str) -> float:
    """Seconds from a key press reaching the app to the DAG line it changed being rendered again."""
    previous = dag.selected
    before = time.perf_counter()
    app.post_message(events.Key(key, None))
    while True:
        node = dag.layout_.positions.get(dag.selected or "")
        if (
            dag.selected != previous
            and node is not None
            and dag.rows.node_row[node.layer] in dag._rows
        ):
            return time.perf_counter() - before
        if time.perf_counter() - before > 10:
            return float("inf")
        await asyncio.sleep(0.0005)


async def bench_ingestion() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = WorkbenchApp(Workbench(workspace=Path(tmp), shipped_dir=Path(tmp) / "none"))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            stop = threading.Event()
            flood_started = time.perf_counter()
            screen = app.start_job(flood_job(RATE, stop))  # type: ignore[arg-type]
            # the keys start once the graph is drawn (its first frame is not ingestion), and the
            # events keep coming until the last key has been answered
            await painted(pilot, lambda: screen.is_mounted and bool(screen.view.order))
            dag = screen.query_one(DagView)
            latencies: list[float] = []
            for index in range(KEYPRESSES):
                latencies.append(await key_to_repaint(app, dag, "down" if index % 2 == 0 else "up"))
                await asyncio.sleep(max(0.0, KEY_INTERVAL_S - latencies[-1]))
            stop.set()
            flood_s = time.perf_counter() - flood_started
            while screen.driver is not None:
                await pilot.pause(0.05)
            absorbed = len(screen.events)
    print(
        f"event ingestion: {RATE} events/s offered for {flood_s:.1f} s; the screen absorbed "
        f"{absorbed} events ({absorbed / flood_s:.0f}/s) while {KEYPRESSES} key presses (DAG "
        f"selection, one every {KEY_INTERVAL_S * 1000:.0f} ms) took p50 "
        f"{statistics.median(latencies) * 1000:.1f} ms, p95 "
        f"{_percentile(latencies, 0.95) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms "
        "to repaint"
    )


def random_dag(size: int, seed: int = 7) -> tuple[list[str], list[tuple[str, str, str]]]:
    graph = nx.gnp_random_graph(size, min(1.0, 2.5 / size), seed=seed, directed=True)
    nodes = [f"step_{i}" for i in range(size)]
    edges = [(nodes[a], nodes[b], "depends_on") for a, b in graph.edges if a < b]
    return nodes, edges


async def bench_dag() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = WorkbenchApp(Workbench(workspace=Path(tmp), shipped_dir=Path(tmp) / "none"))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            dag = DagView()
            await app.screen.mount(dag)
            for size in (50, 300, 1000):
                nodes, edges = random_dag(size)
                started = time.perf_counter()
                layout = compute_layout(nodes, edges)
                layout_s = time.perf_counter() - started
                view = RunView()
                view.apply(
                    run_started(
                        "b",
                        [GraphNode(id=n, uses="demo.echo") for n in nodes],
                        [GraphEdge(source=s, target=t) for s, t, _ in edges],
                    )
                )
                started = time.perf_counter()
                dag.show(view)
                rows = len(dag.rows.rows)
                for row in range(rows):
                    dag._render_row(row)
                render_s = time.perf_counter() - started
                screen_s = []
                for _ in range(
                    2
                ):  # first paint (rows drawn and cached), then a repaint from the cache
                    started = time.perf_counter()
                    for row in range(min(rows, 48)):
                        dag.render_line(row)
                    screen_s.append(time.perf_counter() - started)
                print(
                    f"DAG {size:>5} nodes: layout {layout_s * 1000:7.1f} ms ({len(layout.layers)} layers, "
                    f"{len(layout.positions) - size} dummies); layout+render of all {rows} rows "
                    f"{render_s * 1000:7.1f} ms; one screen: first paint {screen_s[0] * 1000:6.1f} ms, "
                    f"repaint from cached rows {screen_s[1] * 1000:5.2f} ms"
                )


async def bench_startup_in_process() -> tuple[float, float]:
    """To Home's first frame, and to its workflow list filled in by its worker."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        app = WorkbenchApp(Workbench(workspace=Path(tmp)))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            first_frame = time.perf_counter() - started
            while not (isinstance(app.screen, HomeScreen) and app.screen.ready):
                await pilot.pause(0.01)
            return first_frame, time.perf_counter() - started


def main() -> None:
    asyncio.run(bench_ingestion())
    asyncio.run(bench_dag())
    asyncio.run(bench_stored_runs())
    first_frame, listed = asyncio.run(bench_startup_in_process())
    print(
        f"start-up in process (headless): Home's first frame {first_frame * 1000:.0f} ms, its "
        f"shipped workflows listed {listed * 1000:.0f} ms; the `workbench` process's figures "
        "are in bench_startup"
    )


if __name__ == "__main__":
    main()
