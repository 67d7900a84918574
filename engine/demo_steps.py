"""Built-in demo steps: exercise the engine with no model, corpus or network.

Every demo step is deterministic given its inputs, config and iteration, so a
demo workflow gives the same per-step results on every run and on both engines.
``demo.author`` and ``demo.critic`` route their "model" through the call
journal exactly like a real model call would, so resume and shadow runs show
replayed calls with demo workflows too.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.context import InterruptRequest, StepContext
from engine.protocol import TieBreakAnswer, TieBreakRequest
from engine.steps import AnyInput, AnyOutput, step


class DemoFailure(RuntimeError):
    """The failure ``demo.fail`` raises on purpose."""


class Echoed(BaseModel):
    model_config = ConfigDict(extra="allow")


@step("demo.echo")
async def echo(ctx: StepContext, inp: AnyInput) -> Echoed:
    """Return the step's inputs, with ``config.set`` merged over them."""
    values: dict[str, Any] = dict(inp.model_extra or {})
    values.update(ctx.config.get("set", {}))
    return Echoed(**values)


class SleepInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float | None = Field(default=None, ge=0)


class Slept(BaseModel):
    slept_s: float


@step("demo.sleep")
async def sleep(ctx: StepContext, inp: SleepInput) -> Slept:
    """Wait ``seconds`` (input, else ``config.seconds``, else 0.05) — a stand-in for slow work."""
    import asyncio  # here, not at the top: registering the demo steps does not import asyncio

    seconds = inp.seconds if inp.seconds is not None else float(ctx.config.get("seconds", 0.05))
    await asyncio.sleep(seconds)
    return Slept(slept_s=seconds)


@step("demo.fail")
async def fail(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """Fail with ``config.message``; with ``config.fail_times: n`` only the first n attempts fail."""
    fail_times = ctx.config.get("fail_times")
    if fail_times is None or ctx.attempt <= int(fail_times):
        raise DemoFailure(str(ctx.config.get("message", "demo.fail failed on purpose")))
    return AnyOutput(recovered_on_attempt=ctx.attempt)


class AuthorInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topic: str = "the demo topic"
    feedback: str = ""


class Draft(BaseModel):
    draft: str
    version: int
    words: int


@step("demo.author")
async def author(ctx: StepContext, inp: AuthorInput) -> Draft:
    """Write draft version ``iteration + 1``, answering the critic's feedback when there is some."""

    async def compose() -> str:
        note = f" (revised for: {inp.feedback})" if inp.feedback else ""
        return f"Draft {ctx.iteration + 1} on {inp.topic}{note}."

    text, _ = await ctx.journaled("demo.model", compose)
    return Draft(draft=text, version=ctx.iteration + 1, words=len(text.split()))


class CriticInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    draft: str = ""


class Critique(BaseModel):
    status: str
    score: float
    feedback: str
    confidence: float


@step("demo.critic")
async def critic(ctx: StepContext, inp: CriticInput) -> Critique:
    """Judge a draft; converges to VERIFIED on iteration ``config.converge_at`` (default 2)."""
    converge_at = int(ctx.config.get("converge_at", 2))

    async def judge() -> dict[str, Any]:
        verified = ctx.iteration >= converge_at
        score = round(min(1.0, 0.4 + 0.6 * (ctx.iteration + 1) / (converge_at + 1)), 3)
        return {
            "status": "VERIFIED" if verified else "NEEDS_WORK",
            "score": score,
            "feedback": "" if verified else f"tighten section {ctx.iteration + 1}",
            "confidence": 0.9 if verified else 0.6,
        }

    verdict, _ = await ctx.journaled("demo.model", judge)
    return Critique(**verdict)


class ClassifyInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""


class Classified(BaseModel):
    status: str
    confidence: float
    missing_context: bool


@step("demo.classify")
async def classify(ctx: StepContext, inp: ClassifyInput) -> Classified:
    """Label text: ``config.status`` when set; otherwise BLOCKED if the text says so, else VERIFIED."""
    text = inp.text.lower()
    status = str(ctx.config.get("status") or ("BLOCKED" if "blocked" in text else "VERIFIED"))
    confidence = float(ctx.config.get("confidence", 0.9))
    missing = bool(ctx.config.get("missing_context", "context?" in text)) and ctx.iteration == 0
    return Classified(status=status, confidence=confidence, missing_context=missing)


class Gathered(BaseModel):
    sources: list[str]
    count: int


@step("demo.gather")
async def gather(ctx: StepContext, inp: AnyInput) -> Gathered:
    """Collect which upstream steps this one can see (a fan-in)."""
    sources = sorted(ctx.upstream)
    return Gathered(sources=sources, count=len(sources))


class Scored(BaseModel):
    score: float
    terminate: bool = False


@step("demo.score")
async def score(ctx: StepContext, inp: AnyInput) -> Scored:
    """Report ``config.score``; ``config.terminate: true`` asks the run to stop."""
    return Scored(
        score=float(ctx.config.get("score", 0.5)),
        terminate=bool(ctx.config.get("terminate", False)),
    )


class Approval(BaseModel):
    approved: bool
    note: str = ""
    automatic: bool = False


@step("demo.ask")
async def ask(ctx: StepContext, inp: AnyInput) -> Approval:
    """Ask a person to approve (``config.prompt``); the answer is journaled like a model call."""
    answer = await ctx.interrupt(
        InterruptRequest(
            kind="approval",
            prompt=str(ctx.config.get("prompt", "Approve?")),
            payload=dict(inp.model_extra or {}),
            options=["approve", "reject"],
        )
    )
    return Approval(
        approved=answer.action != "reject", note=answer.note, automatic=answer.automatic
    )


DEMO_TIE_BREAKER_CONFIDENCE = 0.5
"""Below every demo workflow's threshold: the demo tie-breaker always leaves it to a person."""


async def demo_tie_breaker(request: TieBreakRequest) -> TieBreakAnswer:
    """The tie-breaker for workflows of demo steps (no model): it suggests the first valid
    target that is not the default edge, unsure, so ADR-004 asks a person — a headless
    run's ``--on-interrupt default`` then takes the default edge, recorded as automatic."""
    others = [t for t in request.valid_targets if t != request.default_target]
    return TieBreakAnswer(
        target=(others or request.valid_targets)[0],
        confidence=DEMO_TIE_BREAKER_CONFIDENCE,
        reasoning="the demo tie-breaker has no model; a person decides",
    )
