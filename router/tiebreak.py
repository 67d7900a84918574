"""The model-backed tie-breaker of ADR-004, engine-agnostic: plain ids and text in, a choice out.

The model is offered only the valid targets, with the step's hint and context;
its answer is validated against them. Whatever goes wrong, the result names
the default target and says what happened — ``invalid_answer`` (not one of the
targets, or not the requested shape, also when the answer is cut at its output
limit again after being asked once more with more room, router/truncation.py),
``timeout`` (30 s by default for both asks, measured on the router's clock), or
``error`` — so the caller can record it and, per
ADR-004, degrade to the deterministic default edge and never block. The
request goes out as task ``tie_break`` with inputs
``{step_id, valid_targets, hint, context}``, so the built-in provider can
answer it too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from router.clock import Clock
from router.errors import RouterError
from router.models import ChatMessage, ChatRequest, ChatResponse
from router.truncation import ask_with_room

log = logging.getLogger(__name__)

TIE_BREAK_TASK = "tie_break"
FALLBACK_NOTE = "(the built-in fallback model answered, not a configured provider) "
"""Starts the reasoning of a choice the offline model made: the person shown the suggestion
must not take it for the configured provider's (only the reasoning reaches the engine)."""
TieBreakOutcome = Literal["model", "invalid_answer", "timeout", "error"]


class TieBreakAnswer(BaseModel):
    """The shape the model is asked for."""

    model_config = ConfigDict(extra="forbid")

    target: str
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: str


class TieBreakResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str
    confidence: float
    reasoning: str
    outcome: TieBreakOutcome
    provider: str | None = None
    degraded: bool = False


class Completer(Protocol):
    clock: Clock

    async def complete(self, req: ChatRequest) -> ChatResponse: ...

    def more_room(self, req: ChatRequest, response: ChatResponse) -> ChatRequest | None: ...


_SYSTEM = (
    "You choose the next step of a workflow. Answer only with JSON of the form "
    '{"target": <one of the valid targets, exactly as written>, "confidence": <0..1>, '
    '"reasoning": <one or two sentences>}. Never name a step that is not in the list.'
)


def tie_break_request(
    *, step_id: str, valid_targets: list[str], hint: str, context: str
) -> ChatRequest:
    targets = "\n".join(f"- {t}" for t in valid_targets)
    user = (
        f"Step {step_id!r} has finished and more than one next step is valid.\n"
        f"Valid targets:\n{targets}\n\nHint: {hint or '(none)'}\n\nContext:\n{context or '(none)'}"
    )
    return ChatRequest(
        task=TIE_BREAK_TASK,
        messages=[
            ChatMessage(role="system", content=_SYSTEM),
            ChatMessage(role="user", content=user),
        ],
        inputs={
            "step_id": step_id,
            "valid_targets": list(valid_targets),
            "hint": hint,
            "context": context,
        },
        response_schema=TieBreakAnswer,
        priority="high",
        temperature=0.0,
    )


def _match_target(answer: str, valid_targets: list[str]) -> str | None:
    if answer in valid_targets:
        return answer
    folded = {t.strip().lower(): t for t in valid_targets}
    return folded.get(answer.strip().lower())


async def choose_target(
    router: Completer,
    *,
    step_id: str,
    valid_targets: list[str],
    hint: str,
    context: str,
    default_target: str,
    timeout_s: float = 30.0,
) -> TieBreakResult:
    """Ask the model to pick one of ``valid_targets``; fall back to ``default_target`` on anything else."""
    if not valid_targets:
        raise ValueError("choose_target needs at least one valid target")

    def fallback(outcome: TieBreakOutcome, reasoning: str) -> TieBreakResult:
        return TieBreakResult(
            target=default_target, confidence=0.0, reasoning=reasoning, outcome=outcome
        )

    request = tie_break_request(
        step_id=step_id, valid_targets=valid_targets, hint=hint, context=context
    )
    call = asyncio.ensure_future(
        ask_with_room(router.complete, request, router.more_room, keep_cut_on=(RouterError,))
    )
    timer = asyncio.ensure_future(router.clock.sleep(timeout_s))
    try:
        await asyncio.wait({call, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
    if not call.done():
        call.cancel()
        await asyncio.gather(call, return_exceptions=True)
        return fallback(
            "timeout", f"the tie-breaker did not answer within {timeout_s:g}s; default edge taken"
        )
    try:
        response = call.result()
    except RouterError as exc:
        log.warning("tie-breaker for step %s failed: %s", step_id, exc)
        return fallback(
            "error", f"the tie-breaker failed ({type(exc).__name__}); default edge taken"
        )
    except Exception as exc:  # any failure degrades to the deterministic default, never blocks
        log.warning("tie-breaker for step %s raised %s", step_id, type(exc).__name__)
        return fallback(
            "error", f"the tie-breaker failed ({type(exc).__name__}); default edge taken"
        )
    answer = response.parsed
    if not isinstance(answer, TieBreakAnswer):
        why = (
            "the answer was cut at its output limit"
            if response.truncated
            else "the answer did not have the requested shape"
        )
        return fallback("invalid_answer", f"{why}; default edge taken")
    target = _match_target(answer.target, valid_targets)
    if target is None:
        return fallback(
            "invalid_answer", f"{answer.target!r} is not a valid target; default edge taken"
        )
    return TieBreakResult(
        target=target,
        confidence=answer.confidence,
        reasoning=FALLBACK_NOTE + answer.reasoning if response.fallback else answer.reasoning,
        outcome="model",
        provider=response.provider,
        degraded=response.degraded,
    )
