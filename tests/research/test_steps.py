"""Research steps run directly on a StepContext: the analysts' lenses and the named pipeline's refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.context import CallUsage, JournalEntry, RunBudget, StepContext, StepInfo, StepServices
from engine.spec import StepSpec
from research.corpus import Corpus, CorpusRetriever
from research.evidence import Claim, EvidenceMap, SubQuestion
from research.extractive import scope
from research.pipeline import ModelPipeline, ModelStage
from research.sources import SourcePolicy
from research.state import Params, ResearchState
from research.steps.analysis import analyst_ai, analyst_swe
from research.steps.common import RoundInput, passage_from_hit, source_from_hit
from research.steps.intake import IntakeInput, intake_scope
from research.steps.retrieval import hypothesis_tree_tot
from research.steps.verification import cove_verify
from research.tasks import ScopeAnswer
from router.local import TaskHandlerRegistry
from router.models import ChatResponse
from tui.launch.wiring import RouterModelCaller, build_workbench_router


class MemoryJournal:
    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, int, int], JournalEntry] = {}

    def get(self, run_id: str, step_id: str, iteration: int, index: int) -> JournalEntry | None:
        return self.entries.get((run_id, step_id, iteration, index))

    def put(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        self.entries[(run_id, step_id, iteration, index)] = entry


def make_context(
    step_id: str,
    uses: str,
    *,
    model: Any,
    retriever: Any = None,
    upstream: dict | None = None,
    budget: RunBudget | None = None,
    journal: MemoryJournal | None = None,
) -> tuple[StepContext, list[tuple[str, dict]]]:
    emitted: list[tuple[str, dict]] = []

    async def ask(*_: Any) -> Any:
        raise AssertionError("no interrupt expected")

    services = StepServices(
        journal=journal or MemoryJournal(),
        budget=budget or RunBudget(300, 2_000_000),
        ask=ask,
        emit_domain=lambda name, payload, _s: emitted.append((name, payload)),
        model=model,
        retriever=retriever,
    )
    spec = StepSpec(id=step_id, uses=uses, config={"round": "1"})
    ctx = StepContext(
        run_id="run-1",
        spec=spec,
        iteration=0,
        attempt=1,
        services=services,
        upstream=upstream or {},
        run_inputs={},
    )
    return ctx, emitted


@pytest.fixture
def builtin_model():
    router = build_workbench_router(None, environ={})
    yield RouterModelCaller(router)
    asyncio.run(router.aclose())


def state_with_passages(corpus_path: Path, query: str) -> ResearchState:
    plan: ScopeAnswer = scope({"query": query, "max_sub_questions": 4})
    with Corpus(corpus_path) as corpus:
        hits = corpus.search(" ".join(plan.key_terms), limit=24, collections=["peps"])
    evidence = EvidenceMap(
        query=query,
        sub_questions=[
            SubQuestion(id=q.id, text=q.text, key_terms=q.key_terms) for q in plan.sub_questions
        ],
    )
    evidence = evidence.add_retrieved(
        [source_from_hit(h, 1) for h in hits], [passage_from_hit(h, 1) for h in hits]
    )
    return ResearchState(
        revision=12,
        subject=plan.subject,
        subject_terms=plan.key_terms,
        params=Params(),
        policy=SourcePolicy(as_of="2025-06-30"),
        evidence=evidence,
        round=1,
    )


def test_the_analysts_read_the_same_evidence_differently(
    pep_corpus_path: Path, builtin_model
) -> None:
    state = state_with_passages(pep_corpus_path, "asyncio coroutines async await")
    upstream = {"retrieval_react_r1": {"state": state.model_dump(mode="json")}}

    async def both() -> tuple[Any, Any]:
        ai_ctx, _ = make_context(
            "analyst_ai_r1", "research.analyst_ai", model=builtin_model, upstream=upstream
        )
        swe_ctx, _ = make_context(
            "analyst_swe_r1", "research.analyst_swe", model=builtin_model, upstream=upstream
        )
        return await analyst_ai(ai_ctx, RoundInput()), await analyst_swe(swe_ctx, RoundInput())

    ai, swe = asyncio.run(both())
    ai_texts = {c.text for c in ai.new_claims}
    swe_texts = {c.text for c in swe.new_claims}
    assert ai_texts and swe_texts and ai_texts != swe_texts
    assert len(ai_texts & swe_texts) < min(len(ai_texts), len(swe_texts))
    for claim in [*ai.new_claims, *swe.new_claims]:
        assert not state.evidence.provenance_problems(claim)


def test_a_claim_without_provenance_is_refused(pep_corpus_path: Path, builtin_model) -> None:
    state = state_with_passages(pep_corpus_path, "asyncio coroutines async await")
    passage = next(iter(state.evidence.passages.values()))
    good = Claim(
        id="good",
        text="quoted",
        quote=passage.text.split(".")[0],
        sub_question="q1",
        passage_ids=[passage.id],
        source_ids=[passage.source_id],
    )
    orphan = Claim(
        id="orphan",
        text="No passage says this.",
        quote="No passage says this.",
        sub_question="q1",
        passage_ids=["peps/pep-0000#999"],
        source_ids=["peps/pep-0000"],
    )
    evidence = state.evidence.with_updates(claims=[good, orphan])
    upstream = {
        "supervisor_r0": {
            "state": state.model_copy(update={"evidence": evidence}).model_dump(mode="json")
        }
    }
    with Corpus(pep_corpus_path) as corpus:
        ctx, emitted = make_context(
            "cove_verify_r1",
            "research.cove_verify",
            model=builtin_model,
            upstream=upstream,
            retriever=CorpusRetriever(corpus, ["peps"]),
        )
        out = asyncio.run(cove_verify(ctx, RoundInput()))
    refused = [p for name, p in emitted if p.get("refusal") == "NO_PROVENANCE"]
    assert refused and "orphan" in refused[0]["detail"]
    claims = {c.id: c for c in out.state.evidence.claims}
    assert claims["orphan"].verification_attempts == 0 and claims["good"].verification_attempts == 1


def test_budget_exceeded_is_a_named_refusal_not_a_crash(builtin_model) -> None:
    ctx, emitted = make_context(
        "intake_scope",
        "research.intake_scope",
        model=builtin_model,
        budget=RunBudget(max_llm_calls=0, token_budget=10),
    )
    out = asyncio.run(
        intake_scope(ctx, IntakeInput(query="what are coroutines", as_of="2025-06-30"))
    )
    assert "BUDGET_EXCEEDED" in out.refusal and out.sub_questions[0].text == "what are coroutines"
    assert [p["stage"] for _, p in emitted] == ["provenance", "budget_check"]
    assert emitted[-1][1]["status"] == "refused"


def test_no_provider_able_to_answer_is_provider_unavailable() -> None:
    from router.build import build_router
    from router.config import router_config_from_env

    router = build_router(
        router_config_from_env({}), stats_path=None, task_handlers=TaskHandlerRegistry()
    )
    try:
        ctx, emitted = make_context(
            "intake_scope", "research.intake_scope", model=RouterModelCaller(router)
        )
        out = asyncio.run(intake_scope(ctx, IntakeInput(query="what are coroutines")))
    finally:
        asyncio.run(router.aclose())
    assert "PROVIDER_UNAVAILABLE" in out.refusal
    assert (
        emitted[-1][1]["stage"] == "model_call"
        and emitted[-1][1]["refusal"] == "PROVIDER_UNAVAILABLE"
    )


class ScriptedModel:
    """Answers with the given contents in turn (what a misbehaving remote model would send)."""

    def __init__(self, contents: list[str]) -> None:
        self.contents = list(contents)

    async def complete(self, request: Any, step: StepInfo) -> ChatResponse:
        return ChatResponse(content=self.contents.pop(0), provider="scripted", model="m")

    def encode(self, response: Any) -> dict:
        return response.model_dump(mode="json")

    def decode(self, request: Any, data: dict) -> ChatResponse:
        return ChatResponse.model_validate(data)

    def usage(self, response: Any) -> CallUsage:
        return CallUsage(tokens=10, provider=response.provider)


def _scope_stage() -> ModelStage:
    return ModelStage(
        task="research.scope",
        schema=ScopeAnswer,
        build_inputs=lambda _c, _r: {"query": "coroutines", "max_sub_questions": 2},
    )


def test_a_malformed_answer_gets_one_repair_attempt() -> None:
    valid = scope({"query": "coroutines", "max_sub_questions": 2}).model_dump_json()
    ctx, _ = make_context(
        "intake_scope", "research.intake_scope", model=ScriptedModel(["{not json", valid])
    )
    result = asyncio.run(ModelPipeline(ctx).run(_scope_stage()))
    assert isinstance(result.answer, ScopeAnswer) and ctx.stats.llm_calls == 2


def test_a_second_malformed_answer_is_replaced_by_the_built_in_answer_marked_degraded() -> None:
    ctx, emitted = make_context(
        "intake_scope", "research.intake_scope", model=ScriptedModel(["{}", '{"subject": 1}'])
    )
    result = asyncio.run(ModelPipeline(ctx).run(_scope_stage()))
    built_in = scope({"query": "coroutines", "max_sub_questions": 2})
    assert result.answer == built_in and result.degraded and ctx.stats.llm_calls == 2
    assert ctx.stats.fallback_calls == 1, "the built-in model's answer is disclosed as one"
    last = emitted[-1][1]
    assert last["stage"] == "validated_result" and last["degraded"] and last["status"] == "ok"
    assert "after one repair" in last["detail"] and "built-in model answered" in last["detail"]


def test_a_rerun_replays_the_journal_instead_of_calling_again(builtin_model) -> None:
    journal = MemoryJournal()
    first_ctx, _ = make_context(
        "intake_scope", "research.intake_scope", model=builtin_model, journal=journal
    )
    first = asyncio.run(
        intake_scope(first_ctx, IntakeInput(query="what are coroutines", as_of="2025-06-30"))
    )
    again_ctx, _ = make_context(
        "intake_scope", "research.intake_scope", model=ScriptedModel([]), journal=journal
    )
    again = asyncio.run(
        intake_scope(again_ctx, IntakeInput(query="what are coroutines", as_of="2025-06-30"))
    )
    assert again == first and again_ctx.stats.replayed == 1


def test_a_refused_hypothesis_tree_still_searches_each_sub_question_by_its_text(
    builtin_model,
) -> None:
    evidence = EvidenceMap(
        query="why?",
        sub_questions=[
            SubQuestion(id="q1", text="Why does it matter?"),
            SubQuestion(id="q2", text="Who uses it?", key_terms=["users"]),
        ],
    )
    state = ResearchState(
        revision=0,
        subject="it",
        subject_terms=[],
        params=Params(),
        policy=SourcePolicy(as_of="2025-06-30"),
        evidence=evidence,
    )
    upstream = {"supervisor_r0": {"state": state.model_dump(mode="json")}}
    ctx, _ = make_context(
        "hypothesis_tree_tot_r1",
        "research.hypothesis_tree_tot",
        model=builtin_model,
        upstream=upstream,
        budget=RunBudget(max_llm_calls=0, token_budget=10),
        retriever=EmptyRetriever(),
    )
    out = asyncio.run(hypothesis_tree_tot(ctx, RoundInput()))
    assert "BUDGET_EXCEEDED" in out.refusal
    assert [(b.sub_question, b.query) for b in out.branches] == [
        ("q1", "Why does it matter?"),
        ("q2", "users"),
    ]


class EmptyRetriever:
    async def search(self, *_: Any, **__: Any) -> list[dict[str, Any]]:
        return []
