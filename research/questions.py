"""Understanding a research question: its kind, its subject, and the sub-questions that fit both.

The kind decides what a good answer needs: a *definition* says what the thing is and does; a
*history* question wants the proposals in order and what replaced what; a *comparison* needs
both sides and their difference; a *how-to* wants usage and requirements; a *rationale*
question wants the problem, the alternatives and the trade-offs; a *current status* question
wants what is in force now and what was superseded. The built-in model plans with these
rules; a real model is asked for the same kinds in its prompt (workflows/prompts/scope.md).

The subject is cut from the question's own words (question words, the kind's cue words and
trailing verbs removed), so it stays a noun phrase and every sub-question built around it
reads as a sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

QuestionKind = Literal["definition", "history", "comparison", "how_to", "rationale", "status"]
KINDS: tuple[QuestionKind, ...] = (
    "definition",
    "history",
    "comparison",
    "how_to",
    "rationale",
    "status",
)

_CUES: tuple[tuple[QuestionKind, re.Pattern[str]], ...] = (
    (
        "comparison",
        re.compile(
            r"\b(compare|comparison|compared|differences?|differ|versus|vs\.?|or)\b|"
            r"\bbetween\b.+\band\b",
            re.I,
        ),
    ),
    (
        "history",
        re.compile(
            r"\b(history|historical|evolve[sd]?|evolution|evolving|timeline|over time|"
            r"came about|come about|come to|came to|origins?|changed?|developed)\b",
            re.I,
        ),
    ),
    (
        "status",
        re.compile(
            r"\b(current(ly)?|status|still|nowadays|today|state of|latest|deprecated|"
            r"in force|supported now)\b",
            re.I,
        ),
    ),
    ("rationale", re.compile(r"^\s*why\b|\b(rationale|motivation|reasons?|purpose)\b", re.I)),
    ("how_to", re.compile(r"\bhow (do|can|should|would) (i|we|you|one)\b|\bhow to\b", re.I)),
)
"""First match wins; a comparison names two things, so it is tested before the others."""

_LEAD = re.compile(
    r"^\s*(please\s+)?(what|which|who|why|how|when|where|is|are|was|were|do|does|did|can|"
    r"could|should|would|will|explain|describe|tell me about|tell me|show me|give an overview of|summari[sz]e)"
    r"\b\s*",
    re.I,
)
_ACTOR = re.compile(
    r"^((do|does|did|can|could|should|would|shall)\s+)?(i|we|you|one)\s+|^to\s+", re.I
)
_AUXILIARY = re.compile(r"^(is|are|was|were|do|does|did|has|have|had|can|could|will)\s+", re.I)
_FRAME = re.compile(
    r"\b(the history of|history of|the evolution of|evolution of|the rationale for|"
    r"rationale for|the motivation for|the reasons? for|the purpose of|the current status of|"
    r"current status of|the status of|status of|the current state of|current state of|"
    r"the state of|state of|the difference between|"
    r"differences? between|the timeline of|timeline of|an overview of|overview of|"
    r"compare|comparison of|compared)\b",
    re.I,
)
_PYTHON_TAIL = re.compile(r"\s+(in|to|for|into|with)\s+(c?python)(\s*\d+(\.\d+)*)?\s*$", re.I)
_VERBS = frozenset(
    """say says hold holds trace traces delegate delegates use uses work works define defined
    handle handles mean means raise raised chain chained add added introduce introduced
    implement implemented do does make makes become became replace replaced support supports
    affect affects interact interacts relate relates get gets come came evolve evolved evolves
    change changed changes need needs behave behaves differ differs store stores run runs
    parse parses create creates write writes compare exist exists mean work happen happens
    matter matters fit fits look looks end ended start started begin began remove removed
    drop dropped deprecate deprecated allow allows allowed require requires required
    have has had supported still now currently already ever always never""".split()
)
"""Verbs that end the subject of "How does X <verb> …" / "Why did X <verb> …"."""
_TRAILING = re.compile(r"[\s?.!:;,]+$")
_TRAILING_WORD = re.compile(
    r"\s+(for|about|over time|today|nowadays|currently|now|still|work|works|anymore)$", re.I
)
_ARTICLE = re.compile(r"^(the|a|an)\s+", re.I)


def gerund(verb: str) -> str:
    """make → making, parse → parsing, set → setting, use → using."""
    lowered = verb.lower()
    if lowered.endswith("ie"):
        return lowered[:-2] + "ying"
    if lowered.endswith("e") and not lowered.endswith(("ee", "ye", "oe")):
        return lowered[:-1] + "ing"
    if (
        len(lowered) <= 4
        and re.search(r"[^aeiou][aeiou][^aeiouwxy]$", lowered)
        and not lowered.endswith(("en", "er"))
    ):
        return lowered + lowered[-1] + "ing"
    return lowered + "ing"


@dataclass(frozen=True)
class QuestionPlan:
    question: str
    kind: QuestionKind
    subject: str
    parts: tuple[str, ...]
    """For a comparison, the two things compared; otherwise the subject alone."""


def classify(question: str) -> QuestionKind:
    for kind, cue in _CUES:
        if kind == "comparison" and not _two_sides(question):
            continue
        if cue.search(question):
            return kind
    return "definition"


def _two_sides(question: str) -> bool:
    return bool(
        re.search(r"\b(compare|versus|vs\.?|differ|differences?|between)\b", question, re.I)
        or re.search(r"\bor\b", question, re.I)
        and re.match(r"^\s*(should|which)\b", question, re.I)
    )


def subject_of(question: str) -> str:
    """The question's subject as a noun phrase in its own words ("structural pattern matching").

    "How do I make X" gives the action as a gerund ("making X"); "How does X work" and
    "Why is X a Y" give X; "What does X say about Y" gives "Y in X".
    """
    text = _TRAILING.sub("", " ".join(question.split()))
    text = _LEAD.sub("", text, count=1)
    actor = _ACTOR.match(text)
    if actor:
        rest = text[actor.end() :].split(" ", 1)
        text = gerund(rest[0]) + (" " + rest[1] if len(rest) > 1 else "")
    else:
        text = _AUXILIARY.sub("", text, count=1)
        about = re.match(r"^(.+?)\s+says?\s+about\s+(.+)$", text, re.I)
        if about:
            text = f"{about.group(2)} in {about.group(1)}"
    text = _FRAME.sub(" ", text)
    text = re.sub(r"\bpython's\s+", "", text, flags=re.I)
    text = _PYTHON_TAIL.sub("", " ".join(text.split()))
    if not actor:
        words = text.split(" ")
        for index, word in enumerate(words[1:], start=1):
            if word.lower() in _VERBS or (word.lower() in ("a", "an") and index > 0):
                text = " ".join(words[:index])
                break
    previous = None
    while previous != text:
        previous = text
        text = _TRAILING_WORD.sub("", _TRAILING.sub("", text))
        text = _PYTHON_TAIL.sub("", text)
    text = text.strip()
    return text or _TRAILING.sub("", question.strip())


def _parts(subject: str) -> tuple[str, ...]:
    pieces = re.split(r"\s+(?:and|vs\.?|versus|or|with)\s+|\s*,\s*", subject, maxsplit=1)
    pieces = [_ARTICLE.sub("", p.strip()) for p in pieces if p.strip()]
    return tuple(pieces) if len(pieces) == 2 else (subject,)


def plan(question: str) -> QuestionPlan:
    kind = classify(question)
    subject = subject_of(question)
    if kind == "comparison" and _ACTOR.match(_LEAD.sub("", question.strip(), count=1)):
        subject = subject.split(" ", 1)[-1]
    parts = _parts(subject) if kind == "comparison" else (subject,)
    if kind == "comparison" and len(parts) < 2:
        kind = "definition"
    return QuestionPlan(question=question, kind=kind, subject=subject, parts=parts)


Facet = tuple[str, str, tuple[str, ...]]
"""(facet name, sub-question template, search terms the facet adds)."""

TEMPLATES: dict[QuestionKind, tuple[Facet, ...]] = {
    "definition": (
        ("definition", "What {be} {s}, and what {do} {it} specify?", ("specification", "defines")),
        ("rationale", "What problem {do} {s} solve?", ("motivation", "problem", "rationale")),
        ("usage", "How {be} {s} used in code?", ("example", "usage", "syntax")),
        (
            "compatibility",
            "Which Python versions and compatibility concerns apply to {s}?",
            ("version", "compatibility", "backwards"),
        ),
        (
            "alternatives",
            "Which alternatives to {s} were considered or rejected?",
            ("alternative", "rejected", "instead"),
        ),
    ),
    "history": (
        (
            "origin",
            "Which proposals first introduced {s}, and when?",
            ("proposal", "introduce", "abstract"),
        ),
        ("changes", "How did {s} change in later proposals?", ("replaces", "changes", "extends")),
        (
            "superseded",
            "Which proposals about {s} were superseded, rejected or withdrawn, and why?",
            ("superseded", "rejected", "withdrawn"),
        ),
        (
            "current",
            "What is the current specification of {s}?",
            ("specification", "semantics", "final"),
        ),
        ("rationale", "What motivated the changes to {s}?", ("motivation", "rationale")),
    ),
    "comparison": (
        ("first", "What {be_a} {a}?", ("specification", "defines")),
        ("second", "What {be_b} {b}?", ("specification", "defines")),
        ("difference", "How do {a} and {b} differ?", ("difference", "unlike", "whereas")),
        ("choice", "When should one use {a} rather than {b}?", ("use", "recommended", "prefer")),
        ("relation", "How are {a} and {b} related in their design?", ("design", "based")),
    ),
    "how_to": (
        ("usage", "How does one go about {s}?", ("example", "usage", "syntax")),
        (
            "specification",
            "What does the specification say about {s}?",
            ("specification", "must", "requires"),
        ),
        ("compatibility", "Which Python versions support {s}?", ("version", "compatibility")),
        (
            "pitfalls",
            "What pitfalls and limitations come with {s}?",
            ("limitation", "caveat", "error"),
        ),
        ("alternatives", "Which alternatives to {s} exist?", ("alternative", "instead")),
    ),
    "rationale": (
        ("problem", "{q}", ("motivation", "problem", "rationale")),
        ("design", "What does the proposal for {s} specify?", ("specification", "defines")),
        (
            "alternatives",
            "Which alternatives were considered or rejected?",
            ("alternative", "rejected", "instead"),
        ),
        (
            "tradeoffs",
            "What trade-offs and backwards-compatibility costs came with the change?",
            ("backwards", "compatibility", "cost"),
        ),
        ("usage", "How {be} {s} used in code?", ("example", "usage")),
    ),
    "status": (
        ("status", "What is the current status of {s}?", ("status", "accepted", "final")),
        (
            "specification",
            "Which proposal about {s} is in force, and what does it specify?",
            ("specification", "final", "implementation"),
        ),
        (
            "superseded",
            "Which proposals about {s} were superseded, rejected or withdrawn?",
            ("superseded", "rejected", "withdrawn"),
        ),
        ("versions", "Which Python versions does {s} apply to?", ("version", "release")),
        ("future", "What changes to {s} are planned or deferred?", ("future", "deferred", "plan")),
    ),
}


def is_plural(phrase: str) -> bool:
    """Plural agreement for a subject: "type hints", "async and await" (not "asyncio", "class")."""
    last = phrase.split(" ")[-1].lower() if phrase else ""
    return " and " in f" {phrase.lower()} " or (
        last.endswith("s") and not last.endswith(("ss", "us", "is", "ys"))
    )


def as_question(text: str) -> str:
    text = _TRAILING.sub("", " ".join(text.split()))
    return (text[:1].upper() + text[1:] + "?") if text else text


def sub_questions(
    question_plan: QuestionPlan, limit: int
) -> list[tuple[str, str, tuple[str, ...]]]:
    """(facet, sub-question text, facet terms), at most ``limit``, in the kind's order."""
    parts = question_plan.parts
    a = parts[0]
    b = parts[1] if len(parts) > 1 else parts[0]
    plural = is_plural(question_plan.subject)
    words = {
        "s": question_plan.subject,
        "a": a,
        "b": b,
        "q": as_question(question_plan.question),
        "be": "are" if plural else "is",
        "be_a": "are" if is_plural(a) else "is",
        "be_b": "are" if is_plural(b) else "is",
        "do": "do" if plural else "does",
        "it": "they" if plural else "it",
    }
    planned = []
    for facet, template, terms in TEMPLATES[question_plan.kind][: max(1, limit)]:
        text = template.format(**words)
        planned.append((facet, text[:1].upper() + text[1:], terms))
    return planned
