"""What a person sees of a run's life, found by mutation testing (tests/engine/MUTANTS.md):
failure messages, the questions a step asks, the tie-breaker's fallbacks, resume and fork
options. Each test pins text or fields that a run shows in its events or its result."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from engine.context import CallUsage, InterruptAnswer, InterruptRequest, StepContext
from engine.events import (
    Log,
    RunEvent,
    RunFinished,
    RunStarted,
    StepFailed,
    StepFinished,
    StepRetrying,
    StepSkipped,
    StepStarted,
)
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.lifecycle import EngineBase, RunNotResumable, resume_refusal
from engine.protocol import RunContext, TieBreakAnswer, TieBreakRequest
from engine.spec import WorkflowDefinition
from engine.sqlite_file import StoreWriteError
from engine.states import RunStatus, StepStatus
from engine.steps import AnyInput, AnyOutput
from engine.store import (
    InMemoryRunStore,
    RunOwned,
    RunOwner,
    RunStore,
    RunSummary,
    StepResult,
)
from engine.time_travel import ForkError
from tests.engine.kahn_helpers import (
    HOOKS,
    TEST_REGISTRY,
    FakeModel,
    answering,
    fresh_gates,
    run,
    step,
    workflow,
)
from tests.engine.reference import probe as _probe  # noqa: F401 - registers ref.probe
from tui.launch.fork_options import fork_edits

ENGINES: dict[str, type[EngineBase]] = {"kahn": KahnEngine, "langgraph": LangGraphEngine}


def _engine(name: str) -> EngineBase:
    return ENGINES[name](registry=TEST_REGISTRY)


# -- how a failed step explains itself ----------------------------------------------------------


class Inner(BaseModel):
    count: int


class Many(BaseModel):
    a: int
    b: int
    c: int
    d: int
    e: int
    f: int
    g: int


class Five(BaseModel):
    a: int
    b: int
    c: int
    d: int
    e: int


class Six(Five):
    f: int


class Nested(BaseModel):
    inner: Inner


class Stamped(BaseModel):
    at: dt.datetime
    note: str = "none"


async def seven_missing(ctx: StepContext, inp: AnyInput) -> Many:
    return {}  # type: ignore[return-value]


async def five_missing(ctx: StepContext, inp: AnyInput) -> Five:
    return {}  # type: ignore[return-value]


async def six_missing(ctx: StepContext, inp: AnyInput) -> Six:
    return {}  # type: ignore[return-value]


async def stamped(ctx: StepContext, inp: AnyInput) -> Stamped:
    return Stamped(at=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))


async def stamped_from_a_mapping(ctx: StepContext, inp: AnyInput) -> Stamped:
    return {"at": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)}  # type: ignore[return-value]


class Moment(BaseModel):
    """Another model than the step's outputs, of the fields it needs."""

    at: dt.datetime


async def stamped_from_another_model(ctx: StepContext, inp: AnyInput) -> Stamped:
    return Moment(at=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))  # type: ignore[return-value]


async def nothing(ctx: StepContext, inp: AnyInput) -> Stamped:
    return None  # type: ignore[return-value]


async def nested_wrong(ctx: StepContext, inp: AnyInput) -> Nested:
    return {"inner": {"count": "many"}}  # type: ignore[return-value]


async def nested_right(ctx: StepContext, inp: AnyInput) -> Nested:
    return Nested(inner=Inner(count=1))


async def not_a_mapping(ctx: StepContext, inp: AnyInput) -> Nested:
    return "plain text"  # type: ignore[return-value]


async def times_out_by_itself(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    raise TimeoutError


TEST_REGISTRY.register("test.seven_missing", seven_missing)
TEST_REGISTRY.register("test.five_missing", five_missing)
TEST_REGISTRY.register("test.six_missing", six_missing)
TEST_REGISTRY.register("test.nested_wrong", nested_wrong)
TEST_REGISTRY.register("test.stamped", stamped)
TEST_REGISTRY.register("test.stamped_from_a_mapping", stamped_from_a_mapping)
TEST_REGISTRY.register("test.stamped_from_another_model", stamped_from_another_model)
TEST_REGISTRY.register("test.nothing", nothing)
TEST_REGISTRY.register("test.nested_right", nested_right)
TEST_REGISTRY.register("test.not_a_mapping", not_a_mapping)
TEST_REGISTRY.register("test.times_out_by_itself", times_out_by_itself)


async def _error_of(uses: str) -> str:
    result, events = await run(workflow(step("s", uses)))
    assert result.status == RunStatus.FAILED
    return next(e.error for e in events if isinstance(e, StepFailed))


@pytest.mark.timeout(30)
async def test_invalid_outputs_name_the_first_five_problems_and_count_the_rest() -> None:
    assert await _error_of("test.seven_missing") == (
        "invalid outputs from test.seven_missing: a: Field required; b: Field required; "
        "c: Field required; d: Field required; e: Field required; and 2 more"
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("uses", "rest"), [("test.five_missing", ""), ("test.six_missing", "; and 1 more")]
)
async def test_invalid_outputs_count_only_the_problems_beyond_the_first_five(
    uses: str, rest: str
) -> None:
    assert await _error_of(uses) == (
        f"invalid outputs from {uses}: a: Field required; b: Field required; "
        f"c: Field required; d: Field required; e: Field required{rest}"
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "uses", ["test.stamped", "test.stamped_from_a_mapping", "test.stamped_from_another_model"]
)
async def test_outputs_are_stored_as_json_values(uses: str) -> None:
    result, events = await run(workflow(step("s", uses)))
    assert result.status == RunStatus.COMPLETED
    finished = next(e for e in events if isinstance(e, StepFinished))
    assert finished.outputs == {"at": "2026-01-02T03:04:05Z", "note": "none"}


@pytest.mark.timeout(30)
async def test_a_step_that_returns_nothing_is_read_as_no_fields_at_all() -> None:
    assert (
        await _error_of("test.nothing") == "invalid outputs from test.nothing: at: Field required"
    )


@pytest.mark.timeout(30)
async def test_invalid_outputs_name_a_nested_field_by_its_dotted_path() -> None:
    assert await _error_of("test.nested_wrong") == (
        "invalid outputs from test.nested_wrong: inner.count: Input should be a valid integer, "
        "unable to parse string as an integer"
    )


@pytest.mark.timeout(30)
async def test_outputs_that_are_not_a_mapping_are_named_as_the_root() -> None:
    assert await _error_of("test.not_a_mapping") == (
        "invalid outputs from test.not_a_mapping: (root): Input should be a valid dictionary "
        "or instance of Nested"
    )


@pytest.mark.timeout(30)
async def test_a_step_timing_out_with_no_timeout_of_its_own_says_timed_out() -> None:
    assert await _error_of("test.times_out_by_itself") == "timed out"


def later_pass_failure() -> WorkflowDefinition:
    """An optional step looping three passes that fails once, in its second pass."""
    return workflow(
        step(
            "work",
            "ref.probe",
            optional=True,
            config={"fail_from": 1, "fail_times": 1},
            routing={
                "kind": "loop",
                "next": "done",
                "loop": {"target": "work", "max_iterations": 3},
            },
        ),
        step("done", depends_on=["work"], trigger="all_done"),
    )


@pytest.mark.timeout(30)
async def test_a_failure_in_a_later_loop_pass_names_that_pass_and_an_optional_step_says_so() -> (
    None
):
    wf = later_pass_failure()
    result, events = await run(wf)
    failed = [e for e in events if isinstance(e, StepFailed)]
    assert [(e.step_id, e.iteration, e.optional) for e in failed] == [("work", 1, True)]
    assert result.step_statuses["work"] == StepStatus.FAILED


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_steps_behind_a_failure_in_a_later_loop_pass_are_marked_in_that_pass(
    engine: str,
) -> None:
    wf = workflow(
        step("work", "ref.probe", config={"fail_from": 1, "fail_times": 1}),
        step("after", "ref.probe", depends_on=["work"]),
        step(
            "check",
            "ref.probe",
            depends_on=["after"],
            routing={
                "kind": "loop",
                "next": "done",
                "loop": {"target": "work", "max_iterations": 2},
            },
        ),
        step("done", depends_on=["check"]),
    )
    result, events = await run(wf, engine=_engine(engine))
    assert result.status == RunStatus.FAILED
    failed = {e.step_id: (e.iteration, e.upstream) for e in events if isinstance(e, StepFailed)}
    assert failed == {
        "work": (1, False),
        "after": (1, True),
        "check": (1, True),
        "done": (0, True),
    }


# -- the run's declared outputs and completion criteria ------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("expr", "status", "reason"),
    [
        ("steps.only.outputs.text", RunStatus.COMPLETED, ""),
        ("null", RunStatus.PARTIAL, "completion criteria not met, missing: output answer"),
        (
            "steps.only.outputs.nothing",
            RunStatus.PARTIAL,
            "completion criteria not met, missing: output answer",
        ),
    ],
)
async def test_a_required_output_that_is_null_or_cannot_be_evaluated_is_missing(
    engine: str, expr: str, status: RunStatus, reason: str
) -> None:
    wf = workflow(
        step("only", inputs={"text": "'found'"}),
        outputs={"answer": expr, "steps_run": "run.step_runs"},
        completion={"required_outputs": ["answer"]},
    )
    store = InMemoryRunStore()
    result, events = await run(wf, store=store, engine=_engine(engine))
    assert (result.status, result.reason) == (status, reason)
    finished = next(e for e in events if isinstance(e, RunFinished))
    assert (finished.status, finished.reason, finished.outputs) == (status, reason, result.outputs)
    assert (finished.missing, finished.step_statuses) == (result.missing, {"only": "SUCCEEDED"})
    assert result.engine == engine
    assert store.get_run(result.run_id).outputs == result.outputs
    assert result.missing == ([] if status == RunStatus.COMPLETED else ["output answer"])
    assert result.outputs["steps_run"] == 1
    assert result.outputs.get("answer") == ("found" if status == RunStatus.COMPLETED else None)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_steps_inputs_read_the_runs_counters(engine: str) -> None:
    wf = workflow(
        step("first"), step("second", depends_on=["first"], inputs={"runs": "run.step_runs"})
    )
    _, events = await run(wf, engine=_engine(engine))
    finished = [e.outputs for e in events if isinstance(e, StepFinished)]
    assert finished[-1] == {"runs": 1}


class FallbackModel(FakeModel):
    """A model whose every answer came from the offline fallback."""

    def usage(self, response: Any) -> CallUsage:
        return CallUsage(tokens=response.tokens, provider="offline", fallback=True)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("model", "provider", "fallbacks"),
    [(FakeModel(["x"], tokens=7), "fake", 0), (FallbackModel(["x"], tokens=7), "offline", 2)],
)
async def test_a_finished_step_reports_its_model_calls_tokens_and_providers(
    engine: str, model: FakeModel, provider: str, fallbacks: int
) -> None:
    wf = workflow(step("ask", "test.model_calls", config={"calls": 2}))
    _, events = await run(wf, model=model, engine=_engine(engine))
    finished = next(e for e in events if isinstance(e, StepFinished))
    assert (finished.llm_calls, finished.tokens, finished.providers) == (2, 14, [provider])
    assert (finished.replayed_calls, finished.fallback_calls) == (0, fallbacks)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_each_route_decided_names_the_pass_it_was_decided_in(engine: str) -> None:
    wf = workflow(
        step(
            "again",
            "ref.probe",
            routing={
                "kind": "loop",
                "next": "done",
                "loop": {"target": "again", "max_iterations": 2},
            },
        ),
        step("done", depends_on=["again"]),
    )
    _, events = await run(wf, engine=_engine(engine))
    assert [e.iteration for e in events if e.kind == "route_decided"] == [0, 1, 2]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_retry_in_a_later_loop_pass_waits_its_delay_and_names_that_pass(
    engine: str,
) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    wf = workflow(
        step(
            "work",
            "ref.probe",
            retries=1,
            retry_delay_s=0.25,
            config={"fail_from": 1, "fail_times": 1},
            routing={
                "kind": "loop",
                "next": "done",
                "loop": {"target": "work", "max_iterations": 1},
            },
        ),
        step("done", depends_on=["work"]),
    )
    waiting = ENGINES[engine](registry=TEST_REGISTRY, sleep=sleep)
    result, events = await run(wf, engine=waiting)
    assert result.status == RunStatus.COMPLETED
    assert slept == [0.25]
    retried = [(e.iteration, e.attempt, e.delay_s) for e in events if isinstance(e, StepRetrying)]
    assert retried == [(1, 2, 0.25)]
    started = [(e.iteration, e.attempt) for e in events if isinstance(e, StepStarted)]
    assert started[:3] == [(0, 1), (1, 1), (1, 2)]


class RecordingModel(FakeModel):
    """A scripted model that keeps each request it was sent."""

    def __init__(self, answers: list[Any]) -> None:
        super().__init__(answers)
        self.requests: list[Any] = []

    async def complete(self, request: Any, step: Any) -> Any:
        self.requests.append(request)
        return await super().complete(request, step)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_the_repair_attempt_tells_the_model_what_was_wrong(engine: str) -> None:
    model = RecordingModel([{"status": "OK"}, {"status": "OK", "score": 0.9}])
    result, _ = await run(
        workflow(step("judge", "test.model_verdict")), model=model, engine=_engine(engine)
    )
    assert result.status == RunStatus.COMPLETED
    assert [r["repair"] for r in model.requests] == [None, "score: Field required"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_step_with_a_timeout_gets_its_inputs(engine: str) -> None:
    wf = workflow(step("timed", inputs={"text": "'in time'"}, timeout_s=5))
    _, events = await run(wf, engine=_engine(engine))
    assert next(e.outputs for e in events if isinstance(e, StepFinished)) == {"text": "in time"}


# -- the questions a step asks a person ---------------------------------------------------------


class Asked:
    """A responder that records each request and answers from a script."""

    def __init__(self, answer: InterruptAnswer) -> None:
        self.answer = answer
        self.requests: list[InterruptRequest] = []

    async def __call__(self, raised: Any, request: InterruptRequest) -> InterruptAnswer:
        self.requests.append(request)
        return self.answer


def _approved_after() -> Any:
    return workflow(
        step(
            "draft",
            inputs={"text": "'hello'"},
            interrupt={"after": True, "kind": "input", "prompt": "Keep this draft?"},
        )
    )


@pytest.mark.timeout(30)
async def test_approving_outputs_shows_them_with_the_three_choices() -> None:
    asked = Asked(InterruptAnswer(action="approve"))
    result, _ = await run(_approved_after(), responder=asked)
    assert result.status == RunStatus.COMPLETED
    request = asked.requests[0]
    assert (request.kind, request.prompt, request.options) == (
        "input",
        "Keep this draft?",
        ["approve", "reject", "edit"],
    )
    assert request.payload == {"outputs": {"text": "hello"}, "when": "after"}


@pytest.mark.timeout(30)
async def test_rejected_outputs_fail_the_step_with_the_persons_note() -> None:
    asked = Asked(InterruptAnswer(action="reject", note="too short"))
    result, events = await run(_approved_after(), responder=asked)
    assert result.status == RunStatus.FAILED
    assert next(e.error for e in events if isinstance(e, StepFailed)) == (
        "outputs rejected (too short)"
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("note", "reason"), [("not now", " (not now)"), ("", "")])
async def test_a_step_rejected_before_it_runs_is_skipped_with_the_persons_note_if_any(
    note: str, reason: str
) -> None:
    wf = workflow(
        step("draft", inputs={"text": "'hello'"}, interrupt={"before": True, "prompt": "Run?"})
    )
    result, events = await run(wf, responder=Asked(InterruptAnswer(action="reject", note=note)))
    assert result.step_statuses["draft"] == StepStatus.SKIPPED
    skipped = next(e for e in events if isinstance(e, StepSkipped))
    assert skipped.reason == "rejected before running" + reason


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_step_waiting_for_an_answer_nobody_gave_is_stored_as_waiting(engine: str) -> None:
    store = InMemoryRunStore()
    result, _ = await run(_approved_after(), store=store, engine=_engine(engine))
    assert result.status == RunStatus.WAITING
    assert store.step_results(result.run_id)["draft"].status == StepStatus.WAITING_HUMAN


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_run_waiting_for_answers_names_the_steps_in_workflow_order_and_has_no_outputs(
    engine: str,
) -> None:
    after = {"after": True, "prompt": "Keep it?"}
    wf = workflow(
        step("zeta", interrupt=after),
        step("alpha", interrupt=after),
        outputs={"answer": "steps.zeta.outputs.text"},
        completion={"required_outputs": ["answer"]},
    )
    store = InMemoryRunStore()
    result, _ = await run(wf, store=store, engine=_engine(engine))
    assert (result.status, result.reason) == (
        RunStatus.WAITING,
        "waiting for an answer at zeta, alpha",
    )
    assert (result.outputs, result.missing) == ({}, [])
    assert store.get_run(result.run_id).outputs == {}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_waiting_run_shows_no_outputs_even_those_it_could_evaluate(engine: str) -> None:
    wf = workflow(
        step("done", inputs={"text": "'found'"}),
        step("ask", interrupt={"after": True, "prompt": "Keep it?"}),
        outputs={"early": "steps.done.outputs.text"},
    )
    store = InMemoryRunStore()
    result, events = await run(wf, store=store, engine=_engine(engine))
    assert (result.status, result.outputs) == (RunStatus.WAITING, {})
    assert store.get_run(result.run_id).outputs == {}
    [finished] = [e for e in events if isinstance(e, RunFinished)]
    assert finished.outputs == {}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_step_still_unanswered_after_a_resume_is_stored_as_waiting_again(
    engine: str,
) -> None:
    store = InMemoryRunStore()
    first, _ = await run(_approved_after(), store=store, engine=_engine(engine))
    again = await _engine(engine).resume(first.run_id, RunContext(store=store))
    assert again.status == RunStatus.WAITING
    assert store.step_results(first.run_id)["draft"].status == StepStatus.WAITING_HUMAN


@pytest.mark.timeout(30)
async def test_edited_outputs_replace_the_fields_given() -> None:
    asked = Asked(InterruptAnswer(action="edit", value={"text": "hello, world"}))
    result, events = await run(_approved_after(), responder=asked)
    assert result.status == RunStatus.COMPLETED
    finished = next(e for e in events if e.kind == "step_finished")
    assert finished.outputs == {"text": "hello, world"}


@pytest.mark.timeout(30)
async def test_an_edit_the_outputs_model_refuses_fails_the_step_naming_the_field() -> None:
    wf = workflow(step("count", "test.nested_right", interrupt={"after": True}))
    asked = Asked(InterruptAnswer(action="edit", value={"inner": {"count": "many"}}))
    result, events = await run(wf, responder=asked)
    assert result.status == RunStatus.FAILED
    assert next(e.error for e in events if isinstance(e, StepFailed)) == (
        "edited outputs are invalid: inner.count: Input should be a valid integer, "
        "unable to parse string as an integer"
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_an_edit_that_is_not_field_value_pairs_keeps_the_outputs_as_they_were(
    engine: str,
) -> None:
    """``workbench resume --answer '{"action": "edit", "value": "text"}'`` sends such an edit."""
    asked = Asked(InterruptAnswer(action="edit", value="hello, world"))
    result, events = await run(_approved_after(), responder=asked, engine=_engine(engine))
    assert result.status == RunStatus.COMPLETED
    finished = next(e for e in events if e.kind == "step_finished")
    assert finished.outputs == {"text": "hello"}


# -- the tie-breaker's fallbacks ----------------------------------------------------------------


def _tie(timeout_s: float = 5.0) -> Any:
    return workflow(
        step("source", inputs={"text": "'needs a look'"}),
        step(
            "judge",
            "demo.classify",
            depends_on=["source"],
            inputs={"text": "steps.source.outputs.text"},
            routing={
                "kind": "conditional",
                "next": "publish",
                "conditions": [{"expr": "outputs.status == 'NEVER'", "target": "rework"}],
                "tie_breaker": {
                    "enabled": True,
                    "valid_targets": ["publish", "rework"],
                    "timeout_s": timeout_s,
                },
            },
        ),
        step("publish"),
        step("rework"),
    )


async def _route_reason(**context: Any) -> str:
    result, events = await run(_tie(context.pop("timeout_s", 5.0)), **context)
    assert result.step_statuses["publish"] == StepStatus.SUCCEEDED
    signal = next(e.signal for e in events if e.kind == "route_decided")
    assert (signal.next_step_id, signal.needs_human) == ("publish", True)
    return str(signal.reason)


@pytest.mark.timeout(30)
async def test_no_tie_breaker_takes_the_default_edge_saying_none_is_configured() -> None:
    assert await _route_reason() == (
        "tie-breaker failed: no tie-breaker is configured; default edge → publish"
    )


@pytest.mark.timeout(30)
async def test_a_failing_tie_breaker_takes_the_default_edge_with_its_error() -> None:
    async def broken(request: TieBreakRequest) -> TieBreakAnswer:
        raise ConnectionError("provider unreachable")

    assert await _route_reason(tie_breaker=broken) == (
        "tie-breaker failed: ConnectionError: provider unreachable; default edge → publish"
    )


@pytest.mark.timeout(30)
async def test_a_tie_breaker_that_never_answers_times_out_to_the_default_edge() -> None:
    async def silent(request: TieBreakRequest) -> TieBreakAnswer:
        await asyncio.Event().wait()
        raise AssertionError("never answers")

    assert await _route_reason(tie_breaker=silent, timeout_s=0.01) == (
        "tie-breaker timed out after 0.01 s; default edge → publish"
    )


@pytest.mark.timeout(30)
async def test_the_tie_breaker_is_shown_the_deciding_steps_upstream_outputs() -> None:
    asked: list[TieBreakRequest] = []

    async def chooser(request: TieBreakRequest) -> TieBreakAnswer:
        asked.append(request)
        return TieBreakAnswer(target="publish", confidence=1.0)

    await run(_tie(), tie_breaker=chooser)
    assert "needs a look" in asked[0].context


@pytest.mark.timeout(30)
async def test_the_tie_breaker_is_shown_the_nearest_upstream_step_first() -> None:
    """Nearest by the workflow's order, not by name: zeta runs first, alpha after it."""
    asked: list[TieBreakRequest] = []

    async def chooser(request: TieBreakRequest) -> TieBreakAnswer:
        asked.append(request)
        return TieBreakAnswer(target="publish", confidence=1.0)

    source, *rest = _tie().steps
    wf = workflow(
        step("zeta", inputs={"text": "'from zeta'"}),
        step("alpha", depends_on=["zeta"], inputs={"text": "'from alpha'"}),
        source.model_copy(update={"depends_on": ["alpha"]}),
        *rest,
    )
    await run(wf, tie_breaker=chooser)
    context = asked[0].context
    assert context.index("from alpha") < context.index("from zeta")


# -- resume -------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
async def test_a_resumed_run_announces_itself_as_resumed() -> None:
    store = InMemoryRunStore()
    waiting, _ = await run(_approved_after(), store=store)
    assert waiting.status == RunStatus.WAITING
    resumed = await KahnEngine(registry=TEST_REGISTRY).resume(
        waiting.run_id, RunContext(store=store, responder=answering({"draft": InterruptAnswer()}))
    )
    assert resumed.status == RunStatus.COMPLETED
    starts = [e.resumed for e in store.events(waiting.run_id) if isinstance(e, RunStarted)]
    assert starts == [False, True]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_finished_run_is_not_resumed_saying_which_runs_resume(engine: str) -> None:
    store = InMemoryRunStore()
    done, _ = await run(workflow(step("only")), store=store, engine=_engine(engine))
    with pytest.raises(RunNotResumable) as refused:
        await _engine(engine).resume(done.run_id, RunContext(store=store))
    assert str(refused.value) == (
        f"run {done.run_id} is COMPLETED; only a RUNNING or WAITING run resumes"
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_run_this_process_drives_is_not_resumed_a_second_time(engine: str) -> None:
    gates = fresh_gates("started", "go")
    HOOKS["slow"] = lambda ctx: gates["started"].set()
    store = InMemoryRunStore()
    wf = workflow(step("slow", "test.gate", config={"wait": "go"}))
    driving = asyncio.create_task(_engine(engine).execute(wf, RunContext(store=store, run_id="r1")))
    await gates["started"].wait()
    with pytest.raises(RunOwned) as refused:
        await _engine(engine).resume("r1", RunContext(store=store))
    assert (str(refused.value), refused.value.run_id) == (
        "run r1 is already running in this process",
        "r1",
    )
    gates["go"].set()
    assert (await driving).status == RunStatus.COMPLETED


# -- a store failure mid-run --------------------------------------------------------------------


class DiskFullAt(RunStore):
    """The run store (a real SQLite file) on a disk that is full when ``step_id``'s result is
    written: a full disk at a chosen moment (test_store_faults fills a real one)."""

    def __init__(self, path: Path, step_id: str) -> None:
        super().__init__(path)
        self.step_id = step_id

    def _write_event(self, event: RunEvent) -> None:
        if isinstance(event, StepFinished) and event.step_id == self.step_id:
            raise sqlite3.OperationalError("database or disk is full")
        super()._write_event(event)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_store_failure_stops_the_run_at_once_resumable_and_owned_by_nobody(
    engine: str, tmp_path: Path
) -> None:
    """The store's error reaches the caller (the command line prints it as one line) while
    another step still runs; the run stays RUNNING (shown as stopped) for ``resume``."""
    fresh_gates("never")
    store = DiskFullAt(tmp_path / "runs.sqlite", "breaks")
    wf = workflow(step("breaks"), step("slow", "test.gate", config={"wait": "never"}))
    with pytest.raises(StoreWriteError, match="database or disk is full"):
        await _engine(engine).execute(wf, RunContext(store=store, run_id="r1"))
    record = store.get_run("r1")
    assert (record.status, record.owner) == (RunStatus.RUNNING, None)
    store.close()


# -- steps that never ran -----------------------------------------------------------------------


@pytest.mark.timeout(30)
async def test_a_step_behind_failed_steps_names_them_and_is_marked_upstream_failed() -> None:
    wf = workflow(
        step("one", "demo.fail"),
        step("two", "demo.fail"),
        step("after", depends_on=["two", "one"], optional=True),
    )
    result, events = await run(wf)
    assert result.step_statuses["after"] == StepStatus.UPSTREAM_FAILED
    failed = next(e for e in events if isinstance(e, StepFailed) and e.step_id == "after")
    assert (failed.error, failed.upstream, failed.optional) == (
        "upstream failed: one, two",
        True,
        True,
    )


def _owned(status: RunStatus, owner_status: str, owner: str) -> RunSummary:
    """A run record whose owner is ``owner``: "none", "this" process or "another" one (pids
    are read when the test runs: a test runner may fork after collecting)."""
    pids = {"none": None, "this": os.getpid(), "another": os.getpid() + 1}
    pid = pids[owner]
    return RunSummary(
        run_id="r1",
        workflow="w",
        status=status,
        engine="kahn",
        created_ts=0.0,
        updated_ts=0.0,
        owner=None if pid is None else RunOwner(host="here", pid=pid, token="t"),
        owner_status=owner_status,  # type: ignore[arg-type]
    )


def test_a_run_another_live_process_drives_is_not_resumed_naming_that_process() -> None:
    assert resume_refusal(_owned(RunStatus.RUNNING, "alive", "another")) == (
        f"run r1 is running in another process (pid {os.getpid() + 1} on here); "
        "not resuming it twice"
    )


@pytest.mark.parametrize(
    ("status", "owner_status", "owner"),
    [
        (RunStatus.WAITING, "alive", "another"),
        (RunStatus.RUNNING, "gone", "another"),
        (RunStatus.RUNNING, "unknown", "another"),
        (RunStatus.RUNNING, "alive", "none"),
        (RunStatus.RUNNING, "alive", "this"),
    ],
)
def test_a_run_nobody_else_drives_may_be_resumed(
    status: RunStatus, owner_status: str, owner: str
) -> None:
    assert resume_refusal(_owned(status, owner_status, owner)) is None


# -- a fork's own event log ---------------------------------------------------------------------


@pytest.mark.timeout(30)
async def test_a_fork_replays_each_kept_result_as_it_ended_into_its_own_log() -> None:
    wf = workflow(
        step(
            "again",
            "ref.probe",
            routing={
                "kind": "loop",
                "next": "last",
                "loop": {"target": "again", "max_iterations": 1},
            },
        ),
        step("broken", "demo.fail", optional=True),
        step("behind", depends_on=["broken"], optional=True),
        step("never", when="false"),
        step("last", depends_on=["again"]),
    )
    store = InMemoryRunStore()
    parent, _ = await run(wf, store=store)
    assert parent.status == RunStatus.COMPLETED
    fork = await KahnEngine(registry=TEST_REGISTRY).fork(
        parent.run_id, "last", RunContext(store=store)
    )
    replayed = {
        e.step_id: e
        for e in store.events(fork.run_id)
        if e.kind in ("step_finished", "step_failed", "step_skipped") and e.step_id != "last"
    }
    assert {k: (e.kind, e.iteration) for k, e in replayed.items()} == {
        "again": ("step_finished", 1),
        "broken": ("step_failed", 0),
        "behind": ("step_failed", 0),
        "never": ("step_skipped", 0),
    }
    assert replayed["again"].outputs["n"] == 1
    assert replayed["never"].reason == "when is false: false"
    broken, behind = replayed["broken"], replayed["behind"]
    assert (broken.upstream, broken.optional, broken.error.startswith("DemoFailure")) == (
        False,
        True,
        True,
    )
    assert (behind.upstream, behind.optional, behind.error) == (
        True,
        True,
        "upstream failed: broken",
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_fork_replays_a_kept_failure_of_a_later_loop_pass_in_that_pass(
    engine: str,
) -> None:
    wf = later_pass_failure()
    store = InMemoryRunStore()
    parent, _ = await run(wf, store=store, engine=_engine(engine))
    assert parent.step_statuses["work"] == StepStatus.FAILED
    fork = await _engine(engine).fork(parent.run_id, "done", RunContext(store=store))
    assert fork.status == RunStatus.COMPLETED
    replayed = [
        (e.step_id, e.iteration) for e in store.events(fork.run_id) if isinstance(e, StepFailed)
    ]
    assert replayed == [("work", 1)]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_fork_announces_itself_and_replays_a_skip_of_a_later_pass_in_that_pass(
    engine: str,
) -> None:
    wf = workflow(
        step("maybe", "ref.probe", when="iteration == 0"),
        step(
            "check",
            "ref.probe",
            depends_on=["maybe"],
            trigger="all_done",
            routing={
                "kind": "loop",
                "next": "done",
                "loop": {"target": "maybe", "max_iterations": 1},
            },
        ),
        step("done", depends_on=["check"]),
    )
    store = InMemoryRunStore()
    parent, _ = await run(wf, store=store, engine=_engine(engine))
    assert parent.step_statuses["maybe"] == StepStatus.SKIPPED
    fork = await _engine(engine).fork(parent.run_id, "done", RunContext(store=store))
    assert fork.status == RunStatus.COMPLETED
    events = store.events(fork.run_id)
    started = next(e for e in events if isinstance(e, RunStarted))
    assert (started.resumed, started.forked_from) == (False, parent.run_id)
    assert store.get_run(fork.run_id).engine_reason == f"fork of {parent.run_id} at done"
    assert [e.message for e in events if isinstance(e, Log)] == [
        f"fork of {parent.run_id} at done: kept 2 step results"
    ]
    assert [(e.step_id, e.iteration) for e in events if isinstance(e, StepSkipped)] == [
        ("maybe", 1)
    ]


# -- edits a fork makes ---------------------------------------------------------------------------


async def _edited_fork(*sets: str) -> tuple[InMemoryRunStore, str]:
    """Fork, at ``last``, a run whose ``s`` succeeded, ``count`` too and ``never`` was skipped."""
    wf = workflow(
        step("s", "test.stamped"),
        step("count", "test.nested_right"),
        step("never", when="false"),
        step("last", depends_on=["s", "count", "never"], trigger="all_done"),
    )
    store = InMemoryRunStore()
    parent, _ = await run(wf, store=store)
    fork = await KahnEngine(registry=TEST_REGISTRY).fork(
        parent.run_id, "last", RunContext(store=store), fork_edits(sets=list(sets))
    )
    return store, fork.run_id


@pytest.mark.timeout(30)
async def test_a_fork_edit_sets_the_outputs_and_their_latest_history_as_json_values() -> None:
    store, fork_id = await _edited_fork("s.note=edited")
    edited = store.step_results(fork_id)["s"]
    assert edited.outputs == {"at": "2026-01-02T03:04:05Z", "note": "edited"}
    assert [h.outputs for h in edited.history] == [edited.outputs]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("nope.x=1", "--set names no step 'nope'; steps: s, count, never, last"),
        (
            "never.x=1",
            "--set never: the step is SKIPPED at the fork point; only outputs of a step that "
            "succeeded before it can be set (fork later, or at it)",
        ),
        (
            'count.inner={"count": "many"}',
            "--set count: inner.count: Input should be a valid integer, unable to parse string "
            "as an integer; give a value test.nested_right accepts",
        ),
    ],
)
async def test_a_fork_edit_that_cannot_be_made_says_why_and_what_to_do(
    edit: str, message: str
) -> None:
    with pytest.raises(ForkError) as refused:
        await _edited_fork(edit)
    assert str(refused.value) == message


# -- what a run says when it starts and why its steps did not run --------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_run_started_announces_the_resolved_inputs(engine: str) -> None:
    wf = workflow(
        step("only"),
        inputs={
            "topic": {"type": "string", "required": True},
            "depth": {"type": "int", "default": 2},
        },
    )
    _, events = await run(wf, inputs={"topic": "tides"}, engine=_engine(engine))
    [started] = [e for e in events if isinstance(e, RunStarted)]
    assert started.inputs == {"topic": "tides", "depth": 2}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_step_a_trigger_rule_skips_says_which_rule_and_why(engine: str) -> None:
    wf = workflow(
        step("ok"),
        step("gone", when="false"),
        step("if_failed", depends_on=["ok"], trigger="one_failed"),
        step("if_one_succeeded", depends_on=["gone"], trigger="one_success"),
        step("if_all_succeeded", depends_on=["ok", "gone"], trigger="all_success"),
        step("if_none_failed", depends_on=["gone"]),
    )
    store = InMemoryRunStore()
    result, _ = await run(wf, store=store, engine=_engine(engine))
    reasons = {r.step_id: r.reason for r in store.step_results(result.run_id).values()}
    assert reasons == {
        "ok": "",
        "gone": "when is false: false",
        "if_failed": "no dependency failed (one_failed)",
        "if_one_succeeded": "every dependency was skipped",
        "if_all_succeeded": "a dependency was skipped (all_success)",
        "if_none_failed": "every dependency was skipped",
    }


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_step_no_router_chose_names_every_router_that_passed_it_by(engine: str) -> None:
    def router(step_id: str, other: str) -> Any:
        return step(
            step_id,
            routing={
                "kind": "conditional",
                "conditions": [{"expr": "false", "target": "chosen_by_none"}],
                "next": other,
            },
        )

    wf = workflow(
        router("first", "left"),
        router("second", "right"),
        step("chosen_by_none"),
        step("left"),
        step("right"),
    )
    store = InMemoryRunStore()
    result, _ = await run(wf, store=store, engine=_engine(engine))
    skipped = store.step_results(result.run_id)["chosen_by_none"]
    assert (skipped.status, skipped.reason) == (
        StepStatus.SKIPPED,
        "not routed (by first, second)",
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
async def test_steps_a_limit_left_unstarted_are_skipped_with_the_limit_named(engine: str) -> None:
    wf = workflow(
        step("first"),
        step("second", depends_on=["first"]),
        step("third", depends_on=["second"]),
        limits={"max_step_runs": 1},
    )
    store = InMemoryRunStore()
    result, _ = await run(wf, store=store, engine=_engine(engine))
    assert (result.status, result.reason) == (RunStatus.PARTIAL, "max_step_runs 1 reached")
    reasons = {r.step_id: r.reason for r in store.step_results(result.run_id).values()}
    assert reasons == {
        "first": "",
        "second": "run stopped: max_step_runs 1 reached",
        "third": "run stopped: max_step_runs 1 reached",
    }


@pytest.mark.timeout(30)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("how", ["cancel", "task"])
async def test_a_cancelled_run_says_cancelled(engine: str, how: str) -> None:
    """``engine.cancel`` and cancelling the run's task both end the run CANCELLED with the
    reason "cancelled", stored and announced."""
    gates = fresh_gates("started", "never")
    HOOKS["stuck"] = lambda ctx: gates["started"].set()
    store = InMemoryRunStore()
    cancelling = _engine(engine)
    wf = workflow(
        step("stuck", "test.gate", config={"wait": "never"}), step("after", depends_on=["stuck"])
    )
    task = asyncio.create_task(cancelling.execute(wf, RunContext(store=store, run_id="r1")))
    await gates["started"].wait()
    if how == "cancel":
        cancelling.cancel("r1")
        assert (await task).reason == "cancelled"
    else:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    record = store.get_run("r1")
    assert (record.status, record.reason) == (RunStatus.CANCELLED, "cancelled")
    [finished] = [e for e in store.events("r1") if isinstance(e, RunFinished)]
    assert (finished.status, finished.reason) == (RunStatus.CANCELLED, "cancelled")


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_new_run_stores_every_steps_pending_row_before_its_first_step_runs(
    engine: str,
) -> None:
    """The rows a run's start writes (one validated result, copied per step) are each step's
    own, as validating each would make them."""
    fresh_gates()
    store = InMemoryRunStore()
    seen: dict[str, Any] = {}
    HOOKS["first"] = lambda ctx: seen.update(store.step_results(ctx.run_id))
    wf = workflow(
        step("first", uses="test.gate"),
        step("second", depends_on=["first"]),
        step("third", depends_on=["second"], optional=True),
    )
    await _engine(engine).execute(wf, RunContext(store=store, run_id="rows"))
    assert seen["first"].status == StepStatus.RUNNING
    for step_id in ("second", "third"):
        assert seen[step_id] == StepResult(step_id=step_id, status=StepStatus.PENDING)
    assert set(seen) == {"first", "second", "third"}
