"""What one step's run shows a person, found by mutation testing (tests/engine/MUTANTS.md,
the step-runner's survivors): a step's duration on the engine's clock, the question asked
before a step runs, why a step failed or was skipped before it started, what a repair or a
retry gets, and how a resumed step counts its runs and replays its calls. Both engines."""

from __future__ import annotations

from typing import Any

import pytest

from engine.context import StepContext
from engine.events import RunEvent, StepFinished
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.lifecycle import EngineBase
from engine.protocol import ExecutionResult, RunContext
from engine.spec import WorkflowDefinition
from engine.states import RunStatus
from engine.steps import AnyInput, AnyOutput
from engine.store import InMemoryRunStore
from tests.engine.kahn_helpers import TEST_REGISTRY, step, workflow

ENGINES: dict[str, type[EngineBase]] = {"kahn": KahnEngine, "langgraph": LangGraphEngine}

CLOCK = "test.clock"
"""``RunContext.extras`` key: the :class:`ManualClock` the engine times steps with."""


class ManualClock:
    """Monotonic seconds that move only when a step says so."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def takes(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """Take ``config.seconds`` on the run's clock."""
    ctx.services.extras[CLOCK].now += ctx.config["seconds"]
    return AnyOutput()


TEST_REGISTRY.register("runner.takes", takes)


async def execute(
    engine: str,
    wf: WorkflowDefinition,
    store: InMemoryRunStore,
    clock: ManualClock | None = None,
    **context: Any,
) -> tuple[ExecutionResult, list[RunEvent]]:
    clock = clock or ManualClock()
    runner = ENGINES[engine](registry=TEST_REGISTRY, clock=clock)
    result = await runner.execute(wf, RunContext(store=store, extras={CLOCK: clock}, **context))
    return result, store.events(result.run_id)


# -- a step's duration ---------------------------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_steps_duration_is_the_time_it_took_on_the_engines_clock_to_the_microsecond(
    engine: str,
) -> None:
    wf = workflow(
        step("slow", "runner.takes", config={"seconds": 1.23456789}),
        step("quick", "runner.takes", depends_on=["slow"], config={"seconds": 2.5}),
    )
    result, events = await execute(engine, wf, InMemoryRunStore())
    assert result.status == RunStatus.COMPLETED
    durations = [(e.step_id, e.duration_s) for e in events if isinstance(e, StepFinished)]
    assert durations == [("slow", 1.234568), ("quick", 2.5)]
