"""What one step's run shows a person, found by mutation testing (tests/engine/MUTANTS.md,
the step-runner's survivors): a step's duration on the engine's clock, the question asked
before a step runs, why a step failed or was skipped before it started, what a repair or a
retry gets, and how a resumed step counts its runs and replays its calls. Both engines."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from engine.context import InterruptAnswer, InterruptRequest, StepContext, StepInfo
from engine.events import InterruptRaised, RunEvent, StepFailed, StepFinished, StepStarted
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.lifecycle import EngineBase
from engine.live import LiveChannel, ModelOutput, ModelOutputSink
from engine.protocol import ExecutionResult, RunContext
from engine.services import ServiceRegistry
from engine.spec import WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.steps import AnyInput, AnyOutput
from engine.store import InMemoryRunStore
from router.clock import ManualClock
from tests.engine.kahn_helpers import (
    TEST_REGISTRY,
    FakeModel,
    FakeResponse,
    answering,
    step,
    workflow,
)

ENGINES: dict[str, type[EngineBase]] = {"kahn": KahnEngine, "langgraph": LangGraphEngine}

pytestmark = pytest.mark.parametrize("engine", ENGINES)


@dataclass(frozen=True)
class StepClock:
    """A service for ``runner.takes``: the :class:`ManualClock` the engine times steps with."""

    clock: ManualClock


async def takes(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """Take ``config.seconds`` on the run's clock."""
    timing = ctx.services.app.get(StepClock)
    assert timing is not None
    timing.clock.advance(ctx.config["seconds"])
    return AnyOutput()


TEST_REGISTRY.register("runner.takes", takes)


async def execute(
    engine: str,
    wf: WorkflowDefinition,
    store: InMemoryRunStore,
    **context: Any,
) -> tuple[ExecutionResult, list[RunEvent]]:
    clock = ManualClock()
    runner = ENGINES[engine](registry=TEST_REGISTRY, clock=clock.monotonic)
    result = await runner.execute(
        wf, RunContext(store=store, services=ServiceRegistry(StepClock(clock)), **context)
    )
    return result, store.events(result.run_id)


# -- a step's duration ---------------------------------------------------------------------------


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


# -- the question asked before a step runs -------------------------------------------------------


class Dated(BaseModel):
    on: dt.date
    pair: tuple[int, int]


async def dated(ctx: StepContext, inp: Dated) -> AnyOutput:
    return AnyOutput(on=inp.on.isoformat())


TEST_REGISTRY.register("runner.dated", dated)


async def test_the_question_before_a_step_shows_its_inputs_as_json_and_the_two_choices(
    engine: str,
) -> None:
    """The inputs as the step's model holds them (a date, a tuple) are shown as JSON values,
    live as in the stored log; nobody answers, so the step waits with no reason given."""
    wf = workflow(
        step(
            "ask",
            "runner.dated",
            inputs={"on": "'2026-01-02'", "pair": "[1, 2]"},
            interrupt={"before": True, "kind": "input", "prompt": "Go ahead?"},
        )
    )
    store = InMemoryRunStore()
    result, events = await execute(engine, wf, store)
    assert result.status == RunStatus.WAITING
    inputs = {"on": "2026-01-02", "pair": [1, 2]}
    assert [e.inputs for e in events if isinstance(e, StepStarted)] == [inputs]
    raised = next(e for e in events if isinstance(e, InterruptRaised))
    assert (raised.interrupt_kind, raised.prompt, raised.options) == (
        "input",
        "Go ahead?",
        ["approve", "reject"],
    )
    assert raised.payload == {"inputs": inputs, "when": "before"}
    waiting = store.step_results(result.run_id)["ask"]
    assert (waiting.status, waiting.reason) == (StepStatus.WAITING_HUMAN, "")


# -- a step that fails or is skipped before it starts --------------------------------------------

LIST_INPUT = {"xs": {"type": "list"}}


async def test_an_input_that_cannot_be_evaluated_fails_the_step_naming_it_and_nothing_starts(
    engine: str,
) -> None:
    wf = workflow(step("read", inputs={"third": "inputs.xs[2]"}), inputs=LIST_INPUT)
    result, events = await execute(engine, wf, InMemoryRunStore(), inputs={"xs": [1]})
    assert result.status == RunStatus.FAILED
    failed = next(e for e in events if isinstance(e, StepFailed))
    assert failed.error.startswith("input 'third' (inputs.xs[2]): ")
    assert len(failed.error) > len("input 'third' (inputs.xs[2]): ")
    after_start = [e.kind for e in events if e.kind in ("step_started", "step_failed", "budget")]
    assert after_start == ["step_failed"]


async def test_a_when_that_cannot_be_evaluated_skips_the_step_saying_why(engine: str) -> None:
    wf = workflow(
        step("maybe", when="inputs.xs[2] > 0"),
        step("after", depends_on=["maybe"]),
        inputs=LIST_INPUT,
    )
    result, _ = await execute(engine, wf, (store := InMemoryRunStore()), inputs={"xs": [1]})
    reason = store.step_results(result.run_id)["maybe"].reason
    assert reason.startswith("when is false: inputs.xs[2] > 0 (")
    assert reason.endswith(")") and len(reason) > len("when is false: inputs.xs[2] > 0 ()")


# -- what a repair attempt gets ------------------------------------------------------------------


class Numbered(BaseModel):
    x: int


class Repaired(BaseModel):
    attempt: int
    x: int
    answer: int
    run_inputs: dict[str, Any]


async def answer_with_context(ctx: StepContext, inp: Numbered) -> Repaired:
    """The model's answer with what the step was given: its attempt, inputs, the run's inputs."""
    response = await ctx.llm({"ask": "a number"})
    return Repaired.model_validate(
        {
            "attempt": ctx.attempt,
            "x": inp.x,
            "answer": response.content,
            "run_inputs": ctx.run_inputs,
        }
    )


TEST_REGISTRY.register("runner.answer_with_context", answer_with_context)


async def test_the_repair_call_gets_the_attempt_and_inputs_of_the_call_it_repairs(
    engine: str,
) -> None:
    wf = workflow(
        step("count", "runner.answer_with_context", inputs={"x": "inputs.n + 1"}),
        inputs={"n": {"type": "int"}},
    )
    model = FakeModel(["not a number", 7])
    result, events = await execute(engine, wf, InMemoryRunStore(), model=model, inputs={"n": 2})
    assert result.status == RunStatus.COMPLETED
    finished = next(e for e in events if isinstance(e, StepFinished))
    assert finished.outputs == {"attempt": 1, "x": 3, "answer": 7, "run_inputs": {"n": 2}}
    assert finished.llm_calls == 2


# -- a step resumed while it waited for an answer ------------------------------------------------


async def resume(
    engine: str, store: InMemoryRunStore, run_id: str, answers: dict[str, InterruptAnswer]
) -> tuple[ExecutionResult, list[RunEvent]]:
    again = ENGINES[engine](registry=TEST_REGISTRY, clock=ManualClock().monotonic)
    result = await again.resume(run_id, RunContext(store=store, responder=answering(answers)))
    return result, store.events(run_id)


async def test_a_looping_step_resumed_from_waiting_counts_and_announces_its_next_pass(
    engine: str,
) -> None:
    """The resumed pass was started before (counted once); the loop's next pass is a new run."""
    wf = workflow(
        step(
            "ask",
            inputs={"text": "'hi'"},
            interrupt={"before": True, "prompt": "Again?"},
            routing={
                "kind": "loop",
                "next": "done",
                "loop": {"target": "ask", "max_iterations": 1},
            },
        ),
        step("done", depends_on=["ask"]),
    )
    store = InMemoryRunStore()
    first, _ = await execute(engine, wf, store)
    assert first.status == RunStatus.WAITING
    result, events = await resume(engine, store, first.run_id, {"ask": InterruptAnswer()})
    assert result.status == RunStatus.COMPLETED
    started = [e.iteration for e in events if isinstance(e, StepStarted) and e.step_id == "ask"]
    assert started == [0, 1]
    assert store.step_results(first.run_id)["ask"].runs == 2


# -- a retry, and a retried step resumed ---------------------------------------------------------


async def calls_then_fails_once(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """A model call, then a failure on the first attempt only."""
    response = await ctx.llm({"ask": "a number"})
    if ctx.attempt == 1:
        raise RuntimeError("fails once on purpose")
    return AnyOutput(answer=response.content)


TEST_REGISTRY.register("runner.calls_then_fails_once", calls_then_fails_once)


async def fails_once_then_asks(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """A failure on the first attempt; the retry asks a person which way to go."""
    if ctx.attempt == 1:
        raise RuntimeError("fails once on purpose")
    answer = await ctx.interrupt(InterruptRequest(kind="input", prompt="Which way?"))
    return AnyOutput(said=answer.value)


TEST_REGISTRY.register("runner.fails_once_then_asks", fails_once_then_asks)


async def test_a_retry_after_the_question_before_replays_the_calls_its_failed_attempt_made(
    engine: str,
) -> None:
    """The retry's calls continue the journal where the failed attempt's began (after the
    question): the model answered once, the retry replays that answer and says so."""
    wf = workflow(
        step("count", "runner.calls_then_fails_once", retries=1, interrupt={"before": True})
    )
    model = FakeModel([5, 6])
    answers = {"count": InterruptAnswer()}
    result, events = await execute(
        engine, wf, InMemoryRunStore(), model=model, responder=answering(answers)
    )
    assert result.status == RunStatus.COMPLETED
    assert len(model.calls) == 1
    finished = next(e for e in events if isinstance(e, StepFinished))
    assert (finished.outputs, finished.llm_calls, finished.replayed_calls) == ({"answer": 5}, 2, 1)


async def test_a_step_resumed_in_its_retry_gets_the_answer_to_the_retrys_own_question(
    engine: str,
) -> None:
    wf = workflow(
        step("pick", "runner.fails_once_then_asks", retries=1, interrupt={"before": True})
    )
    store = InMemoryRunStore()
    before = {"r1:pick:0:0": InterruptAnswer()}
    first, _ = await execute(engine, wf, store, run_id="r1", responder=answering(before))
    assert first.status == RunStatus.WAITING
    asked = store.pending_interrupts("r1")
    assert [(i.interrupt_id, i.request.prompt) for i in asked] == [("r1:pick:0:1", "Which way?")]
    answer = {"r1:pick:0:1": InterruptAnswer(action="answer", value="left")}
    result, events = await resume(engine, store, "r1", answer)
    assert result.status == RunStatus.COMPLETED
    assert next(e.outputs for e in events if isinstance(e, StepFinished)) == {"said": "left"}
    started = [e.attempt for e in events if isinstance(e, StepStarted)]
    assert started == [1, 2]


# -- the services a step is handed ---------------------------------------------------------------


class Retriever:
    """Finds one hit naming the query."""

    async def search(self, query: str, **options: Any) -> list[dict[str, Any]]:
        return [{"query": query, **options}]


class StreamingModel(FakeModel):
    """A fake model that streams its answer in two pieces."""

    async def stream(self, request: Any, step: StepInfo, sink: ModelOutputSink) -> FakeResponse:
        answer = await self.complete(request, step)
        sink("start", "fake", "")
        sink("text", "fake", "hel")
        sink("text", "fake", "lo")
        return answer


async def uses_services(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """A retrieval, a model call, and the run's model answers so far."""
    hits = await ctx.retrieve("pep 8", limit=1)
    response = await ctx.llm({"ask": "anything"})
    return AnyOutput(hits=hits, answer=response.content, answers=ctx.model_answers().answers)


TEST_REGISTRY.register("runner.uses_services", uses_services)


async def test_a_step_retrieves_streams_its_model_call_and_counts_the_runs_model_answers(
    engine: str,
) -> None:
    wf = workflow(
        step("first", "test.model_calls", config={"calls": 2}),
        step("second", "runner.uses_services", depends_on=["first"]),
    )
    live = LiveChannel()
    shown: list[ModelOutput] = []
    live.subscribe(shown.append)
    model = StreamingModel(["hello"])
    context: dict[str, Any] = {"model": model, "retriever": Retriever(), "live": live}
    result, events = await execute(engine, wf, InMemoryRunStore(), **context)
    assert result.status == RunStatus.COMPLETED
    finished = [e.outputs for e in events if isinstance(e, StepFinished)]
    assert finished[-1] == {
        "hits": [{"query": "pep 8", "limit": 1}],
        "answer": "hello",
        "answers": 3,
    }
    streamed = [(e.step_id, e.call_index, e.text, e.done) for e in shown]
    assert streamed[-1] == ("second", 1, "hello", True)
