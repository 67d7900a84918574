"""hypothesis_tree_tot and retrieval_react: what to search for, and the searching.

Tree of Thoughts: for the sub-questions a round aims at (all in round 1, the
uncovered or least verified ones later), probe the corpus, let the model
propose and score search branches, and prune the weakest. ReAct: for each
kept branch, search → read → refine (pseudo-relevance feedback) within a
bound on tool calls, always past every passage read before — so a later
round retrieves passages earlier rounds did not. A recency remediation round
skips the tree and searches each sub-question inside the recency window only
(documents dated between the window's start and ``as_of``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from engine.context import StepContext
from engine.steps import step
from research.evidence import Passage, Source, SubQuestion
from research.pipeline import ModelPipeline, ModelStage
from research.state import PlannedBranch, ResearchState, latest_state, round_of
from research.steps.common import Frozen, RoundInput, passage_from_hit, source_from_hit
from research.tasks import HypothesesAnswer, ReactStep

PROBE_LIMIT = 6
HITS_PER_SEARCH = 4
MAX_TOOL_CALLS = 2
BRANCHES_KEPT = 2


def target_sub_questions(state: ResearchState, round_number: int) -> list[str]:
    ids = [q.id for q in state.evidence.sub_questions]
    if round_number == 1:
        return ids
    covered = {c.sub_question for c in state.evidence.claims}
    uncovered = [q for q in ids if q not in covered]
    if uncovered:
        return uncovered
    verified: dict[str, int] = {q: 0 for q in ids}
    for claim in state.evidence.claims:
        if claim.verified:
            verified[claim.sub_question] = verified.get(claim.sub_question, 0) + 1
    fewest = min(verified.values())
    return [q for q in ids if verified[q] == fewest]


def sub_question_query(state: ResearchState, question: SubQuestion) -> str:
    """The plain search for a sub-question: the subject's terms and its own (its text when there are none)."""
    return " ".join([*state.subject_terms, *question.key_terms]) or question.text


class HypothesesOutput(Frozen):
    round: int
    targets: list[str]
    branches: list[PlannedBranch]
    pruned: int
    refusal: str = ""
    state: ResearchState


@step("research.hypothesis_tree_tot")
async def hypothesis_tree_tot(ctx: StepContext, inp: RoundInput) -> HypothesesOutput:
    """Tree of Thoughts over search strategies: branches scored, the weakest pruned."""
    state = latest_state(ctx)
    round_number = round_of(ctx)
    targets = target_sub_questions(state, round_number)
    seen = set(state.seen_passages)
    questions = {q.id: q for q in state.evidence.sub_questions}

    async def probe(_claims: list[Any]) -> dict[str, list[dict[str, Any]]]:
        probes: dict[str, list[dict[str, Any]]] = {}
        for sub_id in targets:
            hits = await ctx.retrieve(
                sub_question_query(state, questions[sub_id]),
                limit=PROBE_LIMIT,
                collections=state.params.collections or None,
            )
            probes[sub_id] = [
                {
                    "passage_id": h["passage_id"],
                    "title": h["title"],
                    "text": h["text"][:600],
                    "score": h["score"],
                    "known": h["passage_id"] in seen,
                }
                for h in hits
            ]
        return probes

    def build(_claims: list[Any], probes: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        return {
            "round": round_number,
            "subject_terms": state.subject_terms,
            "target_ids": targets,
            "sub_questions": [
                q.model_dump() for q in state.evidence.sub_questions if q.id in targets
            ],
            "probes": probes,
            "tried_queries": state.tried_queries,
            "max_branches": BRANCHES_KEPT,
        }

    result = await ModelPipeline(ctx).run(
        ModelStage(
            task="research.hypotheses",
            schema=HypothesesAnswer,
            build_inputs=build,
            retrieve=probe,
            output_tokens=800,
        )
    )
    kept: list[PlannedBranch] = []
    pruned = 0
    if isinstance(result.answer, HypothesesAnswer):
        for branch in result.answer.branches:
            if branch.pruned or branch.sub_question not in questions:
                pruned += 1
                continue
            kept.append(
                PlannedBranch(
                    sub_question=branch.sub_question, query=branch.query, score=branch.score
                )
            )
    if not kept:
        kept = [
            PlannedBranch(sub_question=s, query=sub_question_query(state, questions[s]), score=0.0)
            for s in targets
        ]
    new_state = state.advanced(
        round_number, "hypotheses", round=round_number, round_kind="full", branches=kept
    )
    return HypothesesOutput(
        round=round_number,
        targets=targets,
        branches=kept,
        pruned=pruned,
        refusal=result.note(),
        state=new_state,
    )


class RetrievalOutput(Frozen):
    round: int
    mode: str
    queries: list[str]
    new_passages: list[str]
    new_sources: int
    tool_calls: int
    refusals: list[str] = Field(default_factory=list)
    state: ResearchState


@step("research.retrieval_react")
async def retrieval_react(ctx: StepContext, inp: RoundInput) -> RetrievalOutput:
    """ReAct retrieval: search, read, refine, within a bound on tool calls."""
    state = latest_state(ctx)
    round_number = round_of(ctx)
    recency_mode = state.round < round_number
    if recency_mode:
        branches = [
            PlannedBranch(sub_question=q.id, query=sub_question_query(state, q), score=0.0)
            for q in state.evidence.sub_questions
        ]
        # Recent as scoring counts it: a date inside [window start, as_of]. A document
        # first published after as_of, or one dated inside the window only by an
        # update after as_of, would add a source that lowers recency instead.
        window_start = state.policy.window_start
        published_after = window_start.isoformat() if window_start else None
        published_before = state.policy.as_of if window_start else None
    else:
        branches = list(state.branches)
        published_after = published_before = None
    seen = list(state.seen_passages)
    seen_set = set(seen)
    sources: list[Source] = []
    passages: list[Passage] = []
    tried = list(state.tried_queries)
    refusals: list[str] = []
    tool_calls = 0
    pipeline = ModelPipeline(ctx)
    for branch in branches:
        query = branch.query
        for call in range(MAX_TOOL_CALLS):
            current = query

            async def search(_claims: list[Any], current: str = current) -> list[dict[str, Any]]:
                options: dict[str, Any] = {
                    "limit": HITS_PER_SEARCH,
                    "exclude_passages": sorted(seen_set),
                    "collections": state.params.collections or None,
                }
                if published_after:
                    options["published_after"] = published_after
                if published_before:
                    options["published_before"] = published_before
                return await ctx.retrieve(current, **options)

            def build(
                _claims: list[Any],
                hits: list[dict[str, Any]],
                current: str = current,
                call: int = call,
            ) -> dict[str, Any]:
                return {
                    "query": current,
                    "step": call,
                    "max_steps": MAX_TOOL_CALLS,
                    "tried_queries": tried,
                    "observations": [
                        {"passage_id": h["passage_id"], "title": h["title"], "text": h["text"]}
                        for h in hits
                    ],
                }

            result = await pipeline.run(
                ModelStage(
                    task="research.react_step",
                    schema=ReactStep,
                    build_inputs=build,
                    retrieve=search,
                    trim="observations",
                    output_tokens=200,
                )
            )
            tool_calls += 1
            tried.append(current)
            for hit in result.retrieved or []:
                source = source_from_hit(hit, round_number)
                if source.authority < state.policy.min_authority or hit["passage_id"] in seen_set:
                    continue
                seen_set.add(hit["passage_id"])
                seen.append(hit["passage_id"])
                sources.append(source)
                passages.append(passage_from_hit(hit, round_number, branch.sub_question, current))
            if result.refusal:
                refusals.append(result.note())
                break
            answer = result.answer
            if not isinstance(answer, ReactStep) or answer.action == "finish" or not answer.query:
                break
            query = answer.query
    known_sources = set(state.evidence.sources)
    evidence = state.evidence.add_retrieved(sources, passages)
    new_state = state.advanced(
        round_number,
        "retrieval",
        evidence=evidence,
        seen_passages=seen,
        tried_queries=tried,
        round=round_number,
        round_kind="recency" if recency_mode else state.round_kind,
    )
    return RetrievalOutput(
        round=round_number,
        mode="recency" if recency_mode else "full",
        queries=[b.query for b in branches],
        new_passages=[p.id for p in passages],
        new_sources=len({s.id for s in sources} - known_sources),
        tool_calls=tool_calls,
        refusals=refusals,
        state=new_state,
    )
