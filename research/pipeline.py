"""The named sequential pipeline every model-backed research step runs (ADR-0002, DESIGN §8).

provenance → budget check → retrieval → prompt build → budget precharge →
model call → budget reconcile → validated result. Each stage emits exactly one
``research.stage`` event; a stage that cannot go on short-circuits with a
named refusal (NO_PROVENANCE, BUDGET_EXCEEDED, PROVIDER_UNAVAILABLE,
CONTEXT_TOO_SMALL), which the step turns into an output that says so instead
of failing the run. Per-claim provenance problems refuse those claims only.

A model answer that does not match the task's schema gets one repair attempt
(the validation error is sent back); when the repaired answer fails too, the
built-in extractive model answers the same structured inputs instead and the
result is marked ``degraded`` (the ``validated_result`` stage says so), so a
misbehaving model slows a run down but never fails it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from engine.context import BudgetExceeded, StepContext
from research.events import STAGE, Refusal, StageName, validated
from research.evidence import Claim, EvidenceMap
from research.extractive import respond
from research.prompts import SYSTEM_PROMPT, estimate_tokens, render
from research.tasks import Answer
from router.errors import RouterError
from router.models import ChatMessage, ChatRequest, ChatResponse, ContextLimit
from router.truncation import ask_with_room, more_room
from router.wire import context_window_problem, request_chars

DEFAULT_CONTEXT_TOKENS = 6000
DEFAULT_OUTPUT_TOKENS = 800
UPSTREAM_CONTEXT_SHARE = 0.2
"""Share of the step's context budget given to compiled upstream outputs (AgentMesh §10)."""


@runtime_checkable
class KnowsContextWindows(Protocol):
    """A model caller that knows the context window of the models a call may reach."""

    def context_limit(self, tier: int, profile: str | None) -> ContextLimit | None: ...


@dataclass
class ModelStage:
    """What a step asks of the pipeline for one model call."""

    task: str
    schema: type[Answer]
    build_inputs: Callable[[list[Claim], Any], dict[str, Any]]
    """(claims that passed provenance, what retrieval returned) → the task's structured inputs."""
    claims: Sequence[Claim] = ()
    evidence: EvidenceMap | None = None
    retrieve: Callable[[list[Claim]], Awaitable[Any]] | None = None
    trim: str | None = None
    """Key of the list in the inputs to shorten (from the end) until the prompt fits the budget."""
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    require_claims: bool = False
    check_output: Callable[[Answer], tuple[Answer, list[str]]] | None = None
    """Output provenance: returns the answer with unprovable items removed, and why each was."""


@dataclass
class PipelineResult:
    task: str
    answer: Answer | None = None
    refusal: Refusal | None = None
    detail: str = ""
    accepted_claims: list[Claim] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    retrieved: Any = None
    tokens: int = 0
    provider: str = ""
    degraded: bool = False

    def note(self) -> str:
        return f"{self.task}: {self.refusal} ({self.detail})" if self.refusal else ""


class _Stop(Exception):
    def __init__(self, refusal: Refusal, detail: str) -> None:
        super().__init__(detail)
        self.refusal = refusal
        self.detail = detail


class ModelPipeline:
    """Runs :class:`ModelStage` plans for one step, emitting a stage event per stage."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx
        self._window: ContextLimit | None = None
        """The tightest context window of the models the current call may reach."""

    def _emit(
        self, task: str, stage: StageName, detail: str, refusal: Refusal | None = None, **extra: Any
    ) -> None:
        self.ctx.emit(
            STAGE,
            validated(
                STAGE,
                stage=stage,
                status="refused" if refusal else "ok",
                refusal=refusal,
                detail=detail,
                task=task,
                **extra,
            ),
        )

    def _refuse(self, task: str, stage: StageName, refusal: Refusal, detail: str) -> _Stop:
        self._emit(task, stage, detail, refusal)
        return _Stop(refusal, detail)

    async def run(self, plan: ModelStage) -> PipelineResult:
        result = PipelineResult(task=plan.task)
        try:
            await self._run(plan, result)
        except _Stop as stop:
            result.refusal = stop.refusal
            result.detail = stop.detail
            result.answer = None
        return result

    async def _run(self, plan: ModelStage, result: PipelineResult) -> None:
        ctx, task = self.ctx, plan.task
        # 1. provenance
        accepted: list[Claim] = []
        problems: list[str] = []
        for claim in plan.claims:
            found = (
                plan.evidence.provenance_problems(claim)
                if plan.evidence
                else ([] if claim.passage_ids else [f"claim {claim.id} cites no passage"])
            )
            if found:
                problems.extend(found)
                result.refused.append(claim.id)
            else:
                accepted.append(claim)
        result.accepted_claims = accepted
        if plan.require_claims and not accepted:
            raise self._refuse(
                task,
                "provenance",
                "NO_PROVENANCE",
                f"no claim with provenance to work on ({len(problems)} refused)",
            )
        if problems:
            self._emit(
                task,
                "provenance",
                f"{len(problems)} refused: {'; '.join(problems[:3])}",
                "NO_PROVENANCE",
            )
        else:
            self._emit(task, "provenance", f"{len(accepted)} claims with provenance")
        # 2. budget check
        budget = ctx.budget
        if budget.remaining_llm_calls < 1 or budget.remaining_tokens < 1:
            raise self._refuse(
                task,
                "budget_check",
                "BUDGET_EXCEEDED",
                f"{budget.remaining_llm_calls} calls and {budget.remaining_tokens} tokens left",
            )
        self._emit(
            task,
            "budget_check",
            f"{budget.remaining_llm_calls} calls, {budget.remaining_tokens} tokens left",
        )
        # 3. retrieval
        retrieved: Any = None
        if plan.retrieve is not None:
            retrieved = await plan.retrieve(accepted)
            count = len(retrieved) if hasattr(retrieved, "__len__") else 0
            self._emit(task, "retrieval", f"{count} results")
        else:
            self._emit(task, "retrieval", "none needed: works on the accumulated evidence")
        result.retrieved = retrieved
        # 4. prompt build under the step's context budget and the models' context window
        inputs = plan.build_inputs(accepted, retrieved)
        limit = ctx.spec.context.max_tokens if ctx.spec.context else DEFAULT_CONTEXT_TOKENS
        upstream = ctx.context(max_tokens=max(1, int(limit * UPSTREAM_CONTEXT_SHARE)))
        tier = ctx.spec.model.tier if ctx.spec.model and ctx.spec.model.tier else 1
        profile = ctx.spec.model.profile if ctx.spec.model else None
        window = self._window = self._context_limit(tier, profile)
        schema = plan.schema.model_json_schema()

        def request_for(inputs: dict[str, Any]) -> ChatRequest:
            return ChatRequest(
                task=task,
                messages=[
                    ChatMessage(role="system", content=SYSTEM_PROMPT),
                    ChatMessage(role="user", content=render(task, inputs, upstream, schema)),
                ],
                inputs=inputs,
                response_schema=plan.schema,
                tier=tier,
                profile=profile,
                max_tokens=plan.output_tokens,
            )

        def too_long(request: ChatRequest) -> str:
            """Why the request does not fit (empty: it fits)."""
            tokens = estimate_tokens(request.messages[-1].content)
            if tokens > limit:
                return f"~{tokens} tokens do not fit the step's budget of {limit}"
            return context_window_problem(window, request, 0, request_chars(request)) or ""

        request = request_for(inputs)
        trimmed = 0
        while too_long(request) and plan.trim and len(inputs.get(plan.trim, [])) > 1:
            inputs = {**inputs, plan.trim: inputs[plan.trim][:-1]}
            trimmed += 1
            request = request_for(inputs)
        prompt_tokens = estimate_tokens(request.messages[-1].content)
        problem = too_long(request)
        if problem:
            raise self._refuse(task, "prompt_build", "CONTEXT_TOO_SMALL", problem)
        self._emit(
            task,
            "prompt_build",
            f"~{prompt_tokens} of {limit} tokens"
            + (f", {window.model}'s context window {window.tokens}" if window else "")
            + (f", {trimmed} items trimmed" if trimmed else ""),
        )
        # 5. budget precharge
        reserve = prompt_tokens + plan.output_tokens
        if reserve > budget.remaining_tokens:
            raise self._refuse(
                task,
                "budget_precharge",
                "BUDGET_EXCEEDED",
                f"needs ~{reserve} tokens, {budget.remaining_tokens} left",
            )
        self._emit(task, "budget_precharge", f"reserved ~{reserve} tokens")
        # 6. model call
        response = await self._call(task, request)
        # 7. budget reconcile
        usage = ctx.services.model.usage(response) if ctx.services.model else None
        result.tokens = usage.tokens if usage else 0
        result.provider = usage.provider if usage else ""
        result.degraded = bool(usage and usage.degraded)
        self._emit(
            task,
            "budget_reconcile",
            f"estimated ~{reserve}, reported {result.tokens} tokens by {result.provider or 'unknown'}"
            + (" (degraded)" if result.degraded else ""),
            provider=result.provider,
            degraded=result.degraded,
        )
        # 8. validated result (one repair attempt, then the built-in model's answer)
        answer, failure = await self._validated(plan, request, response)
        replaced = (
            f"the model's answer failed {plan.schema.__name__} after one repair ({failure}); "
            "the built-in model answered instead"
            if failure
            else ""
        )
        result.degraded = result.degraded or bool(failure)
        if failure:
            ctx.count_fallback_answer()
        result.answer = answer
        if plan.check_output is not None:
            answer, output_problems = plan.check_output(answer)
            result.answer = answer
            if output_problems:
                self._emit(
                    task,
                    "validated_result",
                    "; ".join(
                        filter(
                            None,
                            [
                                replaced,
                                f"{len(output_problems)} refused: "
                                + "; ".join(output_problems[:3]),
                            ],
                        )
                    ),
                    "NO_PROVENANCE",
                    degraded=result.degraded,
                )
                return
        self._emit(
            task,
            "validated_result",
            replaced or f"valid {plan.schema.__name__}",
            degraded=result.degraded,
        )

    def _context_limit(self, tier: int, profile: str | None) -> ContextLimit | None:
        model = self.ctx.services.model
        if isinstance(model, KnowsContextWindows):
            return model.context_limit(tier, profile)
        return None

    async def _call(self, task: str, request: ChatRequest) -> Any:
        """The model's answer; one cut short at its output limit is asked again, once, with more
        room (router/truncation.py) — the cut answer is kept when asking again is refused."""

        def again(asked: ChatRequest, response: Any) -> ChatRequest | None:
            if not isinstance(response, ChatResponse):  # a model caller of another kind
                return None
            return more_room(asked, response, self._window, DEFAULT_OUTPUT_TOKENS)

        async def ask(asked: ChatRequest) -> Any:
            return await self._call_once(task, asked)

        return await ask_with_room(ask, request, again, keep_cut_on=(_Stop,))

    async def _call_once(self, task: str, request: ChatRequest) -> Any:
        try:
            response = await self.ctx.llm(request)
        except BudgetExceeded as exc:
            raise self._refuse(task, "model_call", "BUDGET_EXCEEDED", str(exc)) from None
        except RouterError as exc:
            raise self._refuse(task, "model_call", "PROVIDER_UNAVAILABLE", str(exc)) from None
        truncated = bool(getattr(response, "truncated", False))
        self._emit(
            task,
            "model_call",
            f"answered by {getattr(response, 'provider', '?')}/{getattr(response, 'model', '?')}"
            + (
                f", cut short at its {request.max_tokens or 'default'}-token output limit"
                if truncated
                else ""
            ),
            truncated=truncated,
        )
        return response

    async def _validated(
        self, plan: ModelStage, request: ChatRequest, response: Any
    ) -> tuple[Answer, str]:
        """The answer, and why the model's own failed when the built-in one replaced it."""
        try:
            return _parse(plan.schema, response), ""
        except ValidationError as first:
            error = str(first).splitlines()[0:4]
        repair = request.model_copy(
            update={
                "messages": [
                    *request.messages,
                    ChatMessage(
                        role="assistant", content=str(getattr(response, "content", ""))[:4000]
                    ),
                    ChatMessage(
                        role="user",
                        content="Your answer did not match the schema: "
                        + " ".join(error)
                        + " Answer again with one JSON object that matches the schema.",
                    ),
                ]
            }
        )
        repaired = await self._call(plan.task, repair)
        try:
            return _parse(plan.schema, repaired), ""
        except ValidationError as second:
            reason = str(second).splitlines()[0]
        built_in = plan.schema.model_validate(respond(plan.task, request.inputs))
        return built_in, reason


def _parse(schema: type[Answer], response: Any) -> Answer:
    parsed = getattr(response, "parsed", None)
    if isinstance(parsed, schema):
        return parsed
    if isinstance(parsed, dict):
        return schema.model_validate(parsed)
    return schema.model_validate_json(str(getattr(response, "content", "")))
