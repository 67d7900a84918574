"""The model tasks of deep research: one response schema per task.

A step asks a model by task name with structured ``inputs``; whichever model
answers (a real provider, or the built-in extractive model in
:mod:`research.extractive`) must answer in the task's schema. The names are
the keys of the router's task-handler registry and of the fault server's
responder.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from plumbing.frozen import Frozen
from research.questions import QuestionKind


class Answer(Frozen):
    """The structured answer a model gives to one research task."""


class PlannedSubQuestion(Answer):
    id: str
    text: str
    facet: str
    key_terms: list[str] = Field(default_factory=list)


class ScopeAnswer(Answer):
    subject: str
    kind: QuestionKind = "definition"
    """definition, history, comparison, how_to, rationale or status (research.questions)."""
    sub_questions: list[PlannedSubQuestion] = Field(min_length=1)
    key_terms: list[str] = Field(default_factory=list)


class Branch(Answer):
    sub_question: str
    query: str
    score: float
    pruned: bool = False
    rationale: str = ""


class HypothesesAnswer(Answer):
    branches: list[Branch]


class ReactStep(Answer):
    thought: str
    action: Literal["search", "finish"]
    query: str = ""


class ProposedClaim(Answer):
    text: str
    quote: str
    sub_question: str
    passage_ids: list[str]


class AnalysisAnswer(Answer):
    lens: Literal["ai", "swe"]
    claims: list[ProposedClaim]


class VerificationQuestion(Answer):
    claim_id: str
    question: str
    query: str


class VerificationPlan(Answer):
    questions: list[VerificationQuestion]


class Verdict(Answer):
    claim_id: str
    supported: bool
    supporting_passage_ids: list[str] = Field(default_factory=list)
    rationale: str = ""


class VerificationAnswer(Answer):
    verdicts: list[Verdict]


class FoundContradiction(Answer):
    claim_a: str
    claim_b: str
    kind: Literal["negation", "status", "numeric"]
    detail: str = ""


class ContradictionAnswer(Answer):
    contradictions: list[FoundContradiction]


class SynthesisSection(Answer):
    sub_question: str
    claim_ids: list[str]
    summary: str = ""
    prose: str = ""
    """A model's answer to the sub-question: sentences each closing with ``[claim id]``
    citations of the claims chosen (the built-in model writes none: the report is a brief)."""


class SynthesisAnswer(Answer):
    summary: str
    sections: list[SynthesisSection]


class TieBreakChoice(Answer):
    target: str
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: str


TASK_SCHEMAS: dict[str, type[Answer]] = {
    "research.scope": ScopeAnswer,
    "research.hypotheses": HypothesesAnswer,
    "research.react_step": ReactStep,
    "research.analyze": AnalysisAnswer,
    "research.plan_verification": VerificationPlan,
    "research.verify_claims": VerificationAnswer,
    "research.detect_contradictions": ContradictionAnswer,
    "research.synthesize": SynthesisAnswer,
    "tie_break": TieBreakChoice,
}
