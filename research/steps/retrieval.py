"""hypothesis_tree_tot and retrieval_react: what to search for, and the searching.

Tree of Thoughts: for the sub-questions a round aims at (all in round 1, the
uncovered or least verified ones later), probe the corpus, let the model
propose and score search branches, and prune the weakest. ReAct: for each
kept branch, search → read → refine (pseudo-relevance feedback) within a
bound on tool calls, always past every passage read before — so a later
round retrieves passages earlier rounds did not. Each sub-question is also
searched in further phrasings (its own words, the user's question, the subject
as a phrase), and then the sources are followed: the documents the found ones
name (header fields, links, mentions) or that name them, kept when they are
about the question.

The question decides which documents are evidence at all: the first retrieval
searches the user's question itself and keeps the documents whose relevance to
it is at or above the floor (research.relevance), at most ``MAX_DOCUMENTS``;
every later search of the run reads only those (and the documents followed from
them that are as relevant). When none is, the run reads nothing and says that the
corpus has little on the question. A recency remediation round skips the tree and searches
each sub-question inside the recency window only (documents dated between the
window's start and ``as_of``). No search of the run reads a document published
after ``as_of``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import Field

from engine.context import StepContext
from engine.steps import step
from plumbing.frozen import Frozen
from research.evidence import Passage, Source, SubQuestion
from research.references import relation_rank
from research.relevance import PASSAGE_CANDIDATES, RELEVANCE_FLOOR, asked
from research.state import PlannedBranch, ResearchState, latest_state, round_of
from research.steps.common import RoundInput, passage_from_hit, source_from_hit
from research.text import terms

PROBE_LIMIT = 6
HITS_PER_SEARCH = 4
MAX_TOOL_CALLS = 2
BRANCHES_KEPT = 2
HITS_PER_PHRASING = 3
RELATED_CANDIDATES = 24
RELATED_KEPT = 2
"""Documents followed from the on-topic ones, at most (each as relevant as the floor asks)."""
ANCHOR_CANDIDATES = PASSAGE_CANDIDATES
"""Documents the anchor search may select: those whose best passage relevance reads."""
MAX_DOCUMENTS = 5
"""On-topic documents a run reads at most (the most relevant first)."""


Search = Callable[..., Awaitable[list[dict[str, Any]]]]
"""A retriever's search: ``await search(query, **options)`` → hits (the Retriever shape)."""


async def select_on_topic(
    search: Search, question: str, collections: list[str], as_of: str
) -> dict[str, float]:
    """{source id: relevance} of the documents about ``question``, best first: the run's
    anchor search. The research workflow calls it through its step context (journaled);
    the evaluation's retrieval-only mode calls it on the corpus directly, so both select the
    same documents."""
    hits = await search(
        asked(question),
        collections=collections or None,
        not_after=as_of,
        about=question,
        limit=ANCHOR_CANDIDATES,
        distinct_sources=True,
    )
    ranked = sorted(
        (h for h in hits if h.get("relevance", 1.0) >= RELEVANCE_FLOOR),
        key=lambda h: (-h.get("relevance", 1.0), h["source_id"]),
    )
    return {h["source_id"]: float(h.get("relevance", 1.0)) for h in ranked[:MAX_DOCUMENTS]}


async def on_topic_documents(ctx: StepContext, state: ResearchState) -> dict[str, float]:
    """{source id: relevance} of the documents about the run's question, best first."""
    return await select_on_topic(
        ctx.retrieve, state.evidence.query, state.params.collections, state.policy.as_of
    )


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


def subject_phrase(state: ResearchState) -> str:
    """The subject as an FTS phrase when it has several words (``"with statement"``)."""
    cleaned = re.sub(
        r"^(the|a|an)\s+", "", " ".join(state.subject.replace('"', " ").split()), flags=re.I
    )
    return f'"{cleaned}"' if " " in cleaned and len(cleaned.split()) <= 6 else ""


def sub_question_query(state: ResearchState, question: SubQuestion) -> str:
    """The plain search for a sub-question: the subject's phrase and terms and its own."""
    found = " ".join([*state.subject_terms, *question.key_terms]) or question.text
    return f"{subject_phrase(state)} {found}".strip()


def subject_query(state: ResearchState) -> str:
    found = " ".join(state.subject_terms) or state.evidence.query
    return f"{subject_phrase(state)} {found}".strip()


def phrasings(state: ResearchState, question: SubQuestion) -> list[str]:
    """Further ways to ask for a sub-question: its own words, the user's question, the subject."""
    return list(
        dict.fromkeys(
            p for p in (question.text, state.evidence.query, subject_query(state)) if p.strip()
        )
    )


def relevant_related(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Referenced documents about the question, strongest relation first."""
    kept = [h for h in hits if h.get("relevance", 1.0) >= RELEVANCE_FLOOR]
    return sorted(kept, key=lambda h: (relation_rank(h.get("via", "")), -h["score"]))


def best_sub_question(text: str, questions: list[SubQuestion]) -> str:
    """The sub-question whose key terms the text holds most of (the first on a tie)."""
    found = set(terms(text))
    return max(
        questions,
        key=lambda q: (
            len(found & set(terms(" ".join(q.key_terms) or q.text))),
            -questions.index(q),
        ),
    ).id


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
    from research.pipeline import ModelPipeline, ModelStage
    from research.tasks import HypothesesAnswer

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
                **state.search_options(limit=PROBE_LIMIT, within=sorted(state.on_topic)),
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
    followed: list[str] = Field(default_factory=list)
    """Documents reached by following the references of the documents found, and how."""
    relevance: list[dict[str, Any]] = Field(default_factory=list)
    """Each new passage's relevance to the question: {passage_id, source_id, relevance}."""
    refusals: list[str] = Field(default_factory=list)
    state: ResearchState


@step("research.retrieval_react")
async def retrieval_react(ctx: StepContext, inp: RoundInput) -> RetrievalOutput:
    """ReAct retrieval: search, read, refine, within a bound on tool calls."""
    from research.pipeline import ModelPipeline, ModelStage
    from research.tasks import ReactStep

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
    followed: list[str] = []
    window = {
        key: value
        for key, value in (
            ("published_after", published_after),
            ("published_before", published_before),
        )
        if value
    }

    def admit(hits: list[dict[str, Any]], sub_question: str, query: str) -> int:
        admitted = 0
        for hit in hits:
            source = source_from_hit(hit, round_number)
            if (
                (source.authority < state.policy.min_authority and source.id not in state.on_topic)
                or hit["passage_id"] in seen_set
                or hit.get("relevance", 1.0) < RELEVANCE_FLOOR
            ):
                continue
            seen_set.add(hit["passage_id"])
            seen.append(hit["passage_id"])
            sources.append(source)
            passages.append(passage_from_hit(hit, round_number, sub_question, query))
            admitted += 1
        return admitted

    # A recency round looks for recent sources beyond the documents read so far; the relevance
    # floor (admit) still keeps out every one that is not about the question.
    within = None if recency_mode else sorted(state.on_topic)
    phrase = subject_phrase(state)
    for branch in branches:
        query = branch.query
        if phrase and phrase.strip('"').lower() not in query.lower():
            query = f"{phrase} {query}"
        for call in range(MAX_TOOL_CALLS):
            current = query

            async def search(_claims: list[Any], current: str = current) -> list[dict[str, Any]]:
                return await ctx.retrieve(
                    current,
                    **state.search_options(
                        limit=HITS_PER_SEARCH,
                        exclude_passages=sorted(seen_set),
                        within=within,
                        **window,
                    ),
                )

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
            admit(result.retrieved or [], branch.sub_question, current)
            if result.refusal:
                refusals.append(result.note())
                break
            answer = result.answer
            if not isinstance(answer, ReactStep) or answer.action == "finish" or not answer.query:
                break
            query = answer.query
    questions = {q.id: q for q in state.evidence.sub_questions}
    targets = [q for q in dict.fromkeys(b.sub_question for b in branches) if q in questions]
    for sub_id in targets:
        for phrasing in phrasings(state, questions[sub_id]):
            asked = phrasing + (f" [{published_after}..{published_before}]" if window else "")
            if asked.lower() in {t.lower() for t in tried}:
                continue
            tried.append(asked)
            tool_calls += 1
            hits = await ctx.retrieve(
                phrasing,
                **state.search_options(
                    limit=HITS_PER_PHRASING,
                    exclude_passages=sorted(seen_set),
                    within=within,
                    **window,
                ),
            )
            admit(hits, sub_id, phrasing)
    if not recency_mode:
        read = {p.source_id for p in passages} | set(state.evidence.sources)
        unread = sorted(set(state.on_topic) - read)
        if unread and state.evidence.sub_questions:
            # every document the anchor search judged about the question is read: the searches
            # above rank passages across them, and one document's many matching passages can
            # crowd out another's (the second gold of a history, a rejected proposal)
            tool_calls += 1
            hits = await ctx.retrieve(
                state.evidence.query,
                **state.search_options(
                    limit=len(unread),
                    exclude_passages=sorted(seen_set),
                    within=unread,
                    distinct_sources=True,
                ),
            )
            admit(hits, state.evidence.sub_questions[0].id, state.evidence.query)
        origins = sorted({p.source_id for p in passages} | set(state.evidence.sources))
        if origins and targets:
            tool_calls += 1
            hits = await ctx.retrieve(
                subject_query(state),
                **state.search_options(
                    limit=RELATED_CANDIDATES,
                    exclude_passages=sorted(seen_set),
                    related_to=origins,
                ),
            )
            for hit in relevant_related(hits)[:RELATED_KEPT]:
                via = hit.get("via", "related")
                sub_id = best_sub_question(hit["text"], [questions[q] for q in targets])
                if admit([hit], sub_id, f"{via}: {subject_query(state)}"):
                    followed.append(f"{hit['source_id']} ({via})")
    known_sources = set(state.evidence.sources)
    evidence = state.evidence.add_retrieved(sources, passages)
    new_state = state.advanced(
        round_number,
        "retrieval",
        evidence=evidence,
        seen_passages=seen,
        tried_queries=tried,
        fresh_passages=state.fresh_passages if recency_mode else len(passages),
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
        followed=followed,
        relevance=[
            {"passage_id": p.id, "source_id": p.source_id, "relevance": p.relevance}
            for p in passages
        ],
        refusals=refusals,
        state=new_state,
    )
