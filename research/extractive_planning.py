"""The built-in model's planning answers: the sub-questions (scope), the search branches (Tree
of Thoughts) and the query refinements (ReAct) — what to search for, decided from the request's
structured ``inputs`` alone, deterministically (research.extractive registers them with the other
tasks' answers)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from research.questions import plan as plan_question
from research.questions import sub_questions as planned_sub_questions
from research.tasks import Branch, HypothesesAnswer, PlannedSubQuestion, ReactStep, ScopeAnswer
from research.text import key_phrases, normalize_space, terms, top_terms, words

QUERY_NOISE = frozenset(
    {
        "explain",
        "describe",
        "compare",
        "difference",
        "differences",
        "between",
        "work",
        "works",
        "happen",
        "happens",
        "tell",
        "give",
        "overview",
        "summary",
        "summarize",
        "research",
        "question",
        "questions",
        "about",
        "way",
        "ways",
        "get",
        "make",
        "like",
        "need",
        "history",
        "evolve",
        "evolved",
        "evolution",
        "current",
        "currently",
        "status",
        "timeline",
        "change",
        "changed",
        "come",
        "came",
        "state",
    }
)


# -- decomposition -------------------------------------------------------------
def search_terms(phrase: str, limit: int = 6) -> list[str]:
    """The words of a phrase worth searching for (question words and noise left out)."""
    found = [p for p in key_phrases(phrase, limit=12, min_length=2) if p not in QUERY_NOISE]
    return found[:limit] or words(phrase)[:3]


def scope(inputs: dict[str, Any]) -> ScopeAnswer:
    """Classify the question, find its subject against the corpus's vocabulary, and plan the
    sub-questions its kind needs (the question itself first)."""
    query = str(inputs["query"])
    spelled = str(inputs.get("spelling") or query)
    limit = int(inputs.get("max_sub_questions", 4))
    vocabulary = inputs.get("vocabulary")
    understood = plan_question(
        spelled, vocabulary if isinstance(vocabulary, dict) and vocabulary else None
    )
    understood = replace(understood, question=query)
    subject_terms = search_terms(understood.subject) if understood.subject else []
    part_terms = [search_terms(part) for part in understood.parts if part]
    planned = []
    for index, (facet, text, facet_terms) in enumerate(
        planned_sub_questions(understood, limit), start=1
    ):
        own = subject_terms if facet != "question" else search_terms(spelled, limit=12)
        if understood.kind == "comparison" and facet in ("first", "second"):
            own = part_terms[0 if facet == "first" else 1]
        planned.append(
            PlannedSubQuestion(
                id=f"q{index}",
                text=text,
                facet=facet,
                key_terms=list(dict.fromkeys([*own, *facet_terms])),
            )
        )
    return ScopeAnswer(
        subject=understood.subject or spelled,
        kind=understood.kind,
        sub_questions=planned,
        key_terms=subject_terms,
    )


# -- Tree of Thoughts: branches scored, the weakest pruned ---------------------
def hypotheses(inputs: dict[str, Any]) -> HypothesesAnswer:
    subject_terms: list[str] = list(inputs.get("subject_terms", []))
    keep = int(inputs.get("max_branches", 2))
    round_number = int(inputs.get("round", 1))
    tried = {normalize_space(q).lower() for q in inputs.get("tried_queries", [])}
    branches: list[Branch] = []
    for sub in inputs.get("sub_questions", []):
        if sub["id"] not in inputs.get("target_ids", [sub["id"]]):
            continue
        probes = list(inputs.get("probes", {}).get(sub["id"], []))
        novel = [p for p in probes if not p.get("known")]
        facet_terms = [t for t in sub.get("key_terms", []) if t not in subject_terms]
        feedback = top_terms(
            (p["text"] for p in novel),
            exclude=[*subject_terms, *facet_terms],
            limit=2 + round_number,
        )
        candidates = [" ".join([*subject_terms, *facet_terms])]
        candidates.append(" ".join([*subject_terms, *feedback[:2]]))
        candidates.append(
            " ".join([*subject_terms, *feedback[round_number - 1 : round_number + 1]])
        )
        if novel:
            title_terms = [
                w for w in key_phrases(novel[0].get("title", ""), limit=3) if w not in subject_terms
            ]
            candidates.append(" ".join([*subject_terms, *title_terms]))
        probe_text = " ".join(p["text"] for p in novel)
        probe_terms = set(terms(probe_text))
        novelty = len(novel) / len(probes) if probes else 0.0
        scored: list[tuple[float, str]] = []
        for candidate in dict.fromkeys(c.strip() for c in candidates if c.strip()):
            candidate_terms = terms(candidate)
            support = (
                sum(1 for t in candidate_terms if t in probe_terms) / len(candidate_terms)
                if candidate_terms
                else 0
            )
            penalty = 0.5 if normalize_space(candidate).lower() in tried else 1.0
            scored.append((round(penalty * (0.5 * novelty + 0.5 * support), 4), candidate))
        scored.sort(key=lambda item: (-item[0], item[1]))
        for rank, (score, candidate) in enumerate(scored):
            branches.append(
                Branch(
                    sub_question=sub["id"],
                    query=candidate,
                    score=score,
                    pruned=rank >= keep,
                    rationale=f"novel probe hits {len(novel)}/{len(probes)}, term support",
                )
            )
    return HypothesesAnswer(branches=branches)


# -- ReAct: refine the query by pseudo-relevance feedback ----------------------
def react_step(inputs: dict[str, Any]) -> ReactStep:
    query = str(inputs["query"])
    observations = list(inputs.get("observations", []))
    step_number = int(inputs.get("step", 0))
    max_steps = int(inputs.get("max_steps", 3))
    tried = {normalize_space(q).lower() for q in inputs.get("tried_queries", [])}
    if not observations:
        return ReactStep(thought="the search returned nothing new; stop here", action="finish")
    if step_number + 1 >= max_steps:
        return ReactStep(
            thought=f"read {len(observations)} passages; the tool-call bound is reached",
            action="finish",
        )
    feedback = top_terms((o["text"] for o in observations), exclude=words(query), limit=2)
    refined = normalize_space(" ".join([query, *feedback]))
    if not feedback or refined.lower() in tried:
        return ReactStep(thought="no new terms in what was read; stop here", action="finish")
    return ReactStep(
        thought=f"read {len(observations)} passages; narrowing with {', '.join(feedback)}",
        action="search",
        query=refined,
    )
