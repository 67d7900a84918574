"""One clock for a run (issue 26): its elapsed time, its ``timeout_s`` and the budget events
come from the engine's injected clock, as each step's duration does — a test moves time by
hand, never waits for it. Both engines."""

from __future__ import annotations

import pytest

from engine.context import InterruptAnswer
from engine.events import Budget, RunEvent, StepFinished
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.lifecycle import EngineBase
from engine.protocol import ExecutionResult, RunContext
from engine.services import ServiceRegistry
from engine.spec import Limits, WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.store import InMemoryRunStore
from router.clock import ManualClock
from tests.engine.kahn_helpers import TEST_REGISTRY, StepClock, answering, step, workflow

ENGINES: dict[str, type[EngineBase]] = {"kahn": KahnEngine, "langgraph": LangGraphEngine}

pytestmark = pytest.mark.parametrize("engine", ENGINES)


async def execute(
    engine: str, wf: WorkflowDefinition, store: InMemoryRunStore, clock: ManualClock
) -> tuple[ExecutionResult, list[RunEvent]]:
    runner = ENGINES[engine](registry=TEST_REGISTRY, clock=clock.monotonic, sleep=clock.sleep)
    result = await runner.execute(
        wf, RunContext(store=store, services=ServiceRegistry(StepClock(clock)))
    )
    return result, store.events(result.run_id)


async def test_the_budget_events_and_the_stored_state_count_the_engines_time(engine: str) -> None:
    wf = workflow(
        step("first", "runner.takes", config={"seconds": 2.5}),
        step("second", "runner.takes", depends_on=["first"], config={"seconds": 4.0}),
    )
    store = InMemoryRunStore()
    result, events = await execute(engine, wf, store, ManualClock())
    assert result.status == RunStatus.COMPLETED
    assert [e.elapsed_s for e in events if isinstance(e, Budget)] == [2.5, 6.5]
    assert store.get_run(result.run_id).engine_state["elapsed_s"] == 6.5


async def test_the_budget_events_time_is_kept_to_the_microsecond(engine: str) -> None:
    wf = workflow(step("first", "runner.takes", config={"seconds": 1.23456789}))
    store = InMemoryRunStore()
    result, events = await execute(engine, wf, store, ManualClock())
    assert [e.elapsed_s for e in events if isinstance(e, Budget)] == [1.234568]
    assert store.get_run(result.run_id).engine_state["elapsed_s"] == 1.234568


async def test_expressions_read_the_runs_time_on_the_engines_clock(engine: str) -> None:
    wf = workflow(
        step("first", "runner.takes", config={"seconds": 2.5}),
        step("reads", depends_on=["first"], inputs={"elapsed": "run.elapsed_s"}),
    )
    result, events = await execute(engine, wf, InMemoryRunStore(), ManualClock())
    [finished] = [e for e in events if isinstance(e, StepFinished) and e.step_id == "reads"]
    assert finished.outputs == {"elapsed": 2.5}


async def test_a_run_whose_time_is_exactly_used_up_starts_nothing_more(engine: str) -> None:
    wf = workflow(
        step("first", "runner.takes", config={"seconds": 10.0}),
        step("second", "runner.takes", depends_on=["first"], config={"seconds": 1.0}),
        limits=Limits(timeout_s=10),
    )
    result, _ = await execute(engine, wf, InMemoryRunStore(), ManualClock())
    assert (result.status, result.reason) == (RunStatus.PARTIAL, "timeout_s 10 reached")
    assert result.step_statuses["second"] == StepStatus.SKIPPED


async def test_a_run_with_time_left_starts_its_next_step(engine: str) -> None:
    wf = workflow(
        step("first", "runner.takes", config={"seconds": 9.5}),
        step("second", "runner.takes", depends_on=["first"], config={"seconds": 0.25}),
        limits=Limits(timeout_s=10),
    )
    result, _ = await execute(engine, wf, InMemoryRunStore(), ManualClock())
    assert result.status == RunStatus.COMPLETED


async def test_timeout_s_is_reached_on_the_engines_clock(engine: str) -> None:
    """Eleven seconds pass on the clock the engine was given in the first step, none on any
    other clock: the run ends PARTIAL at its ten-second limit before the next step starts."""
    wf = workflow(
        step("first", "runner.takes", config={"seconds": 11.0}),
        step("second", "runner.takes", depends_on=["first"], config={"seconds": 1.0}),
        limits=Limits(timeout_s=10),
    )
    store = InMemoryRunStore()
    result, _ = await execute(engine, wf, store, ManualClock())
    assert (result.status, result.reason) == (RunStatus.PARTIAL, "timeout_s 10 reached")
    assert result.step_statuses == {"first": StepStatus.SUCCEEDED, "second": StepStatus.SKIPPED}
    assert store.step_results(result.run_id)["second"].reason == "run stopped: timeout_s 10 reached"


async def test_a_resumed_run_counts_its_earlier_time_on_the_clock_it_is_resumed_with(
    engine: str,
) -> None:
    wf = workflow(
        step("first", "runner.takes", config={"seconds": 3.0}),
        step("asks", "demo.echo", depends_on=["first"], interrupt={"before": True}),
        step("last", "runner.takes", depends_on=["asks"], config={"seconds": 2.0}),
    )
    store, clock = InMemoryRunStore(), ManualClock()
    waiting, _ = await execute(engine, wf, store, clock)
    assert waiting.status == RunStatus.WAITING
    assert store.get_run(waiting.run_id).engine_state["elapsed_s"] == 3.0
    later = ManualClock(start=50_000.0)  # another process: another clock
    resumer = ENGINES[engine](registry=TEST_REGISTRY, clock=later.monotonic, sleep=later.sleep)
    answers = {"asks": InterruptAnswer(action="approve")}
    resumed = await resumer.resume(
        waiting.run_id,
        RunContext(
            store=store, services=ServiceRegistry(StepClock(later)), responder=answering(answers)
        ),
    )
    assert resumed.status == RunStatus.COMPLETED
    budgets = [e.elapsed_s for e in store.events(waiting.run_id) if isinstance(e, Budget)]
    assert budgets[-1] == 5.0
