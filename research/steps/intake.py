"""intake_scope and source_policy: the plan of the research and the rules its sources live by."""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import Field, field_validator

from engine.context import StepContext
from engine.steps import step
from plumbing.frozen import Frozen
from research.ci import weights_named
from research.dates import parse_iso_day
from research.evidence import EvidenceMap, SubQuestion
from research.sources import DOMAINS, SourcePolicy, effective_date, resolve_window
from research.state import Params, ResearchState
from research.steps.common import RoundInput

WINDOW_PROBE_LIMIT = 60
MIN_SOURCE_AUTHORITY = 0.5
"""Sources below this (Rejected, Withdrawn) are not admitted as evidence (the source policy)."""


class IntakeInput(Frozen):
    query: str = Field(min_length=1)
    domain: str | None = None
    as_of: str | None = None
    max_rounds: int = Field(default=4, ge=1, le=4)
    min_recent_sources: int = Field(default=10, ge=0)
    patience: int = Field(default=1, ge=0)
    tiebreaker_weights: str = "proposed"
    max_sub_questions: int = Field(default=4, ge=1, le=5)
    collections: list[str] = Field(default_factory=list)

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty; ask something")
        return value

    @field_validator("domain", mode="before")
    @classmethod
    def _domain(cls, value: Any) -> str | None:
        if value in (None, "", "auto"):
            return None
        if value not in DOMAINS:
            raise ValueError(
                f"unknown domain {value!r}; use one of {', '.join(DOMAINS)} (or leave it out)"
            )
        return str(value)

    @field_validator("as_of", mode="before")
    @classmethod
    def _as_of(cls, value: Any) -> str | None:
        if value in (None, ""):
            return None
        return (
            value.isoformat() if isinstance(value, date) else parse_iso_day(str(value)).isoformat()
        )

    @field_validator("tiebreaker_weights")
    @classmethod
    def _weights(cls, value: str) -> str:
        weights_named(value)
        return value


class PlannedQuestion(Frozen):
    id: str
    text: str
    facet: str = ""
    key_terms: list[str] = Field(default_factory=list)


class IntakeOutput(Frozen):
    query: str
    kind: str = "definition"
    subject: str
    subject_terms: list[str]
    sub_questions: list[PlannedQuestion]
    domain: str | None
    as_of: str
    max_rounds: int
    min_recent_sources: int
    patience: int
    tiebreaker_weights: str
    collections: list[str]
    refusal: str = ""


@step("research.intake_scope")
async def intake_scope(ctx: StepContext, inp: IntakeInput) -> IntakeOutput:
    """Decompose the question into sub-questions (the plan a person approves)."""
    from research.corpus import KnowsVocabulary
    from research.pipeline import ModelPipeline, ModelStage
    from research.tasks import ScopeAnswer

    retriever = ctx.services.retriever

    async def vocabulary(_claims: list[Any]) -> dict[str, Any]:
        if not isinstance(retriever, KnowsVocabulary):
            return {}
        spelled = await retriever.corrected(inp.query)
        vocabulary = await retriever.vocabulary(spelled, inp.collections)
        return {
            **({"vocabulary": vocabulary} if vocabulary else {}),
            **({"spelling": spelled} if spelled != inp.query else {}),
        }

    stage = ModelStage(
        task="research.scope",
        schema=ScopeAnswer,
        output_tokens=600,
        retrieve=vocabulary,
        build_inputs=lambda _c, found: {
            "query": inp.query,
            "max_sub_questions": inp.max_sub_questions,
            **found,
        },
    )
    result = await ModelPipeline(ctx).run(stage)
    if isinstance(result.answer, ScopeAnswer):
        answer = result.answer
        planned = [
            PlannedQuestion(id=q.id, text=q.text, facet=q.facet, key_terms=q.key_terms)
            for q in answer.sub_questions
        ]
        subject, subject_terms, kind = answer.subject, answer.key_terms, answer.kind
    else:
        planned = [PlannedQuestion(id="q1", text=inp.query, facet="question", key_terms=[])]
        subject, subject_terms, kind = inp.query, [], "definition"
    return IntakeOutput(
        query=inp.query,
        kind=kind,
        subject=subject,
        subject_terms=subject_terms,
        sub_questions=planned,
        domain=inp.domain,
        as_of=inp.as_of or date.today().isoformat(),
        max_rounds=inp.max_rounds,
        min_recent_sources=inp.min_recent_sources,
        patience=inp.patience,
        tiebreaker_weights=inp.tiebreaker_weights,
        collections=inp.collections,
        refusal=result.note(),
    )


class SourcePolicyOutput(Frozen):
    on_topic: dict[str, float]
    """The documents about the question and their relevance (empty: the corpus has little on it)."""
    window_days: int | None
    window_origin: str
    window_rationale: str
    recency_required: bool
    as_of: str
    state: ResearchState


def _plan(ctx: StepContext) -> IntakeOutput:
    for outputs in ctx.upstream.values():
        if outputs and "sub_questions" in outputs and "as_of" in outputs:
            return IntakeOutput.model_validate(outputs)
    raise RuntimeError(f"{ctx.step_id}: needs the outputs of research.intake_scope upstream")


@step("research.source_policy")
async def source_policy(ctx: StepContext, inp: RoundInput) -> SourcePolicyOutput:
    """Fix as_of, the recency window (domain, or inferred from the corpus) and the source floor."""
    plan = _plan(ctx)
    as_of = date.fromisoformat(plan.as_of)
    probe = " ".join(plan.subject_terms) or plan.query
    hits = await ctx.retrieve(
        probe,
        limit=WINDOW_PROBE_LIMIT,
        distinct_sources=True,
        collections=plan.collections or None,
        not_after=plan.as_of,
    )
    stated = (effective_date(hit.get("published"), hit.get("updated"), as_of) for hit in hits)
    dates = [d for d in stated if d is not None]
    window, origin, rationale = resolve_window(plan.domain, dates, as_of, plan.min_recent_sources)
    policy = SourcePolicy(
        as_of=plan.as_of,
        domain=plan.domain,
        window_days=window,
        window_origin=origin,
        window_rationale=rationale,
        min_recent_sources=plan.min_recent_sources,
        min_authority=MIN_SOURCE_AUTHORITY,
    )
    evidence = EvidenceMap(
        query=plan.query,
        sub_questions=[
            SubQuestion(id=q.id, text=q.text, key_terms=q.key_terms) for q in plan.sub_questions
        ],
    )
    state = ResearchState(
        revision=2,
        on_topic={},
        kind=plan.kind,
        subject=plan.subject,
        subject_terms=plan.subject_terms,
        params=Params(
            max_rounds=plan.max_rounds,
            patience=plan.patience,
            weights=plan.tiebreaker_weights,
            collections=plan.collections,
        ),
        policy=policy,
        evidence=evidence,
    )
    from research.steps.retrieval import on_topic_documents

    state = state.model_copy(update={"on_topic": await on_topic_documents(ctx, state)})
    return SourcePolicyOutput(
        on_topic=state.on_topic,
        window_days=window,
        window_origin=origin,
        window_rationale=rationale,
        recency_required=policy.recency_required,
        as_of=plan.as_of,
        state=state,
    )
