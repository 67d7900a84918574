"""Shared pieces for the engine tests: a private step registry, a fake model, runners.

Test steps live in their own registry (the demo steps copied in), so they
never show up in the process-wide one the loader reports from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

import engine.demo_steps  # noqa: F401 - registers the demo steps copied below
from engine.context import CallUsage, InterruptAnswer, InterruptRequest, StepContext, StepInfo
from engine.events import InterruptRaised, RunEvent
from engine.kahn import KahnEngine
from engine.lifecycle import EngineBase
from engine.protocol import ExecutionResult, InterruptResponder, RunContext, TieBreaker
from engine.spec import StepSpec, WorkflowDefinition
from engine.steps import REGISTRY, AnyInput, AnyOutput, StepRegistry
from engine.store import BaseRunStore, InMemoryRunStore

TEST_REGISTRY = StepRegistry()
for _name in REGISTRY.names():
    if _name.startswith("demo."):
        TEST_REGISTRY.register(_name, REGISTRY.get(_name).function)

GATES: dict[str, asyncio.Event] = {}
"""Named gates test steps wait on or open (set up per test with ``fresh_gates``)."""

HOOKS: dict[str, Callable[[StepContext], None]] = {}


def fresh_gates(*names: str) -> dict[str, asyncio.Event]:
    GATES.clear()
    HOOKS.clear()
    for name in names:
        GATES[name] = asyncio.Event()
    return GATES


async def gate(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """Wait for ``config.wait`` (if any) and then open ``config.open`` (if any)."""
    hook = HOOKS.get(ctx.step_id)
    if hook is not None:
        hook(ctx)
    if "wait" in ctx.config:
        await GATES[ctx.config["wait"]].wait()
    if "open" in ctx.config:
        GATES[ctx.config["open"]].set()
    return AnyOutput(step=ctx.step_id, iteration=ctx.iteration)


TEST_REGISTRY.register("test.gate", gate)


async def yield_a_little(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """Give the event loop ``config.yields`` turns, so steps interleave."""
    for _ in range(int(ctx.config.get("yields", 0))):
        await asyncio.sleep(0)
    return AnyOutput()


TEST_REGISTRY.register("test.yield", yield_a_little)


class FakeResponse(BaseModel):
    model_config = ConfigDict(frozen=True)
    content: Any
    tokens: int = 10


class FakeModel:
    """A ModelCaller answering from a script (one answer per call, the last one repeats)."""

    def __init__(self, answers: list[Any], tokens: int = 10) -> None:
        self.answers = answers
        self.tokens = tokens
        self.calls: list[StepInfo] = []

    async def complete(self, request: Any, step: StepInfo) -> FakeResponse:
        answer = self.answers[min(len(self.calls), len(self.answers) - 1)]
        self.calls.append(step)
        return FakeResponse(content=answer, tokens=self.tokens)

    def encode(self, response: Any) -> dict[str, Any]:
        return response.model_dump(mode="json")

    def decode(self, request: Any, data: dict[str, Any]) -> FakeResponse:
        return FakeResponse.model_validate(data)

    def usage(self, response: Any) -> CallUsage:
        return CallUsage(tokens=response.tokens, provider="fake")


class Verdict(BaseModel):
    status: str
    score: float


async def model_verdict(ctx: StepContext, inp: AnyInput) -> Verdict:
    """Ask the model for a verdict; on the repair attempt the request says what was wrong."""
    response = await ctx.llm({"ask": "verdict", "repair": getattr(ctx, "repair_error", None)})
    return Verdict.model_validate(response.content)


TEST_REGISTRY.register("test.model_verdict", model_verdict)


async def model_calls(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """Make ``config.calls`` model calls."""
    for _ in range(int(ctx.config.get("calls", 1))):
        await ctx.llm({"ask": "anything"})
    return AnyOutput(calls=ctx.stats.llm_calls)


TEST_REGISTRY.register("test.model_calls", model_calls)


def step(step_id: str, uses: str = "demo.echo", **fields: Any) -> StepSpec:
    return StepSpec(id=step_id, uses=uses, **fields)


def workflow(*steps: StepSpec, name: str = "test_flow", **fields: Any) -> WorkflowDefinition:
    return WorkflowDefinition(name=name, steps=list(steps), **fields)


async def approve_all(raised: Any, request: InterruptRequest) -> InterruptAnswer:
    return request.default or InterruptAnswer(action="approve", automatic=True)


def answering(
    answers: Mapping[str, InterruptAnswer], otherwise: InterruptResponder | None = None
) -> InterruptResponder:
    """A responder with answers given ahead: a prompt's answer by its interrupt id or its step
    id, else ``otherwise``'s (None: nobody answers, the step waits)."""

    async def respond(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer | None:
        given = answers.get(raised.interrupt_id) or answers.get(raised.step_id)
        if given is None and otherwise is not None:
            return await otherwise(raised, request)
        return given

    return respond


async def run(
    wf: WorkflowDefinition,
    *,
    store: BaseRunStore | None = None,
    responder: InterruptResponder | None = None,
    model: Any = None,
    tie_breaker: TieBreaker | None = None,
    answers: dict[str, InterruptAnswer] | None = None,
    inputs: dict[str, Any] | None = None,
    engine: EngineBase | None = None,
) -> tuple[ExecutionResult, list[RunEvent]]:
    store = store or InMemoryRunStore()
    context = RunContext(
        store=store,
        inputs=inputs or {},
        responder=answering(answers, responder) if answers else responder,
        model=model,
        tie_breaker=tie_breaker,
    )
    result = await (engine or KahnEngine(registry=TEST_REGISTRY)).execute(wf, context)
    return result, store.events(result.run_id)


def kinds_of(events: list[RunEvent], step_id: str) -> list[str]:
    return [e.kind for e in events if getattr(e, "step_id", None) == step_id]


def first_seq(events: list[RunEvent], kind: str, step_id: str) -> int:
    return next(e.seq for e in events if e.kind == kind and getattr(e, "step_id", None) == step_id)


@dataclass(frozen=True)
class CallCounter:
    """A service for test steps: the file each real execution of a counted call appends to."""

    path: Path


async def journaled_counted_call(ctx: StepContext, answer: str) -> str:
    """One journaled "model" call answering ``answer``; each real execution appends the step id
    to the run's :class:`CallCounter`, so a test can tell a call made from one replayed out of
    the journal."""
    counter = ctx.services.app.get(CallCounter)
    assert counter is not None, "the run has no CallCounter service"

    async def call() -> str:
        with counter.path.open("a") as handle:
            handle.write(f"{ctx.step_id}\n")
        return answer

    value, _ = await ctx.journaled("llm", call)
    return value
