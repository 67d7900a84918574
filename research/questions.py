"""Understanding a research question: its kind, its subject, and the sub-questions that fit both.

The kind decides what a good answer needs: a *definition* says what the thing is and does; a
*history* question wants the proposals in order and what replaced what; a *comparison* needs
both sides and their difference; a *how-to* wants usage and requirements; a *rationale*
question wants the problem, the alternatives and the trade-offs; a *current status* question
wants what is in force now and what was superseded. The built-in model plans with these
rules; a real model is asked for the same kinds in its prompt (workflows/prompts/scope.md).

The first sub-question is always the question itself, in the user's words. The subject the
facets are built around is cut from the question's own words (question words, the kind's cue
words and trailing verbs removed) and then checked against the corpus's vocabulary: a phrase
with a clause inside, or made only of the corpus's domain words (a word most of its documents
hold, such as "Python" among the PEPs), is no subject — the object of the question's verb is
tried instead ("How did Python add *the walrus operator*?"), and when that is no subject either,
the question itself is the only sub-question. The facet templates hold the subject as the
object of a verb or preposition, so they read as sentences for any noun phrase.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
    r"\s+(for|about|over time|today|nowadays|currently|now|still|work|works|anymore|"
    r"rejected|accepted|withdrawn|deferred|abandoned)$",
    re.I,
)
_ARTICLE = re.compile(r"^(the|a|an)\s+", re.I)
_SECOND_VERB = re.compile(
    r" and (?!(?:the|a|an|my|your|its|their|then|also|other|all|any|some|this|that)\b)"
    r"([a-z]+(?<!ing)(?<!s)) ",
)
"""The bare verb of a second action ("cancel a task and *wait* for it"), made a gerund too."""


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
        text = _SECOND_VERB.sub(lambda m: f" and {gerund(m.group(1))} ", text + " ").strip()
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


DOMAIN_SHARE = 0.5
"""A word found in at least this share of the corpus's documents names its domain ("Python" in
the PEPs), never a subject: a subject made only of such words is no subject."""
SUBJECT_WORDS = 10
_CLAUSE = re.compile(
    r"\b(why|how|what|which|when|where|who|whom|whose)\b|"
    r"\b(is|are|was|were|do|does|did|can|could|should|would|will)\s+(it|they|he|she|we|i|you|this|that)\b",
    re.I,
)
_NOT_A_NOUN_PHRASE = re.compile(
    r"\b(i|i'm|i've|i'd|me|my|mine|we|we're|we've|our|us|you|you're|your|someone|somebody)\b|"
    r"n't\b|\b(am|is|are|was|were|be|been|has|have|had|do|does|did)\b|"
    r"\S\s+that\b|"
    r"^(in|on|at|from|to|into|of|by|about)\b|^\S+\s+to\b|"
    r"\b(a|an|the|to|in|on|at|from|into|of|by|about|as|than|like|there|only|and|or|is|are)$",
    re.I,
)
"""What a noun phrase does not hold: the asker ("I'm porting", "our numerical code"), a finite
or negated verb ("prefixes are", "can't I unpack"), a relative clause ("None a callable object
that returns None"), a verb's complement ("need to", "happened to the proposal"), or an opening
or closing function word ("from xrange() objects", "the plan to", "want there") — the pieces a
cut of the question's words leaves when its sentence is not the shape the cut expects."""


def is_subject(phrase: str, vocabulary: Mapping[str, float] | None = None) -> bool:
    """Whether ``phrase`` can stand as the subject sub-questions are built around: a short noun
    phrase, no clause inside, and — given the corpus's vocabulary ({word: share of documents
    holding it}) — at least one word the corpus holds that is not its domain word."""
    words = phrase.split()
    if (
        not words
        or len(words) > SUBJECT_WORDS
        or _CLAUSE.search(phrase)
        or _NOT_A_NOUN_PHRASE.search(phrase)
    ):
        return False
    if vocabulary is None:
        return True
    content = [w.lower().strip("?.,!:;'\"()") for w in words]
    shares = [vocabulary[w] for w in content if w in vocabulary]
    return any(0.0 < share < DOMAIN_SHARE for share in shares)


def _object_of(question: str, subject: str) -> str:
    """What follows the subject and its verb ("How did Python add *the walrus operator*?")."""
    text = _TRAILING.sub("", " ".join(question.split()))
    at = text.lower().find(subject.lower())
    if at < 0 or not subject:
        return ""
    rest = text[at + len(subject) :].split(" ", 2)
    tail = rest[2] if len(rest) > 2 else ""
    tail = re.split(r"\s*(?:,|\band why\b|\band how\b|\band what\b|\?)", tail, maxsplit=1)[0]
    return _TRAILING_WORD.sub("", _PYTHON_TAIL.sub("", tail)).strip()


def plan(question: str, vocabulary: Mapping[str, float] | None = None) -> QuestionPlan:
    """The question's kind and subject; ``subject`` is empty when no phrase of the question can
    stand as its subject (then the only sub-question is the question itself)."""
    kind = classify(question)
    subject = subject_of(question)
    if kind == "comparison" and _ACTOR.match(_LEAD.sub("", question.strip(), count=1)):
        subject = subject.split(" ", 1)[-1]
    if not is_subject(subject, vocabulary):
        found = _object_of(question, subject)
        subject = found if is_subject(found, vocabulary) else ""
    parts = _parts(subject) if kind == "comparison" and subject else (subject,)
    if kind == "comparison" and len(parts) < 2:
        kind = "definition"
    return QuestionPlan(question=question, kind=kind, subject=subject, parts=parts)


Facet = tuple[str, str, tuple[str, ...]]
"""(facet name, sub-question template, search terms the facet adds)."""

TEMPLATES: dict[QuestionKind, tuple[Facet, ...]] = {
    "definition": (
        (
            "definition",
            "What do the documents specify about {s}?",
            ("specification", "defines"),
        ),
        ("rationale", "What motivated {s}?", ("motivation", "problem", "rationale")),
        ("usage", "How do programs use {s}?", ("example", "usage", "syntax")),
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
        ("changes", "How did later proposals change {s}?", ("replaces", "changes", "extends")),
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
    ),
    "comparison": (
        ("first", "What do the documents say about {a}?", ("specification", "defines")),
        ("second", "What do the documents say about {b}?", ("specification", "defines")),
        ("difference", "How do {a} and {b} differ?", ("difference", "unlike", "whereas")),
        ("choice", "When should one use {a} rather than {b}?", ("use", "recommended", "prefer")),
    ),
    "how_to": (
        ("usage", "Which examples show {s}?", ("example", "usage", "syntax")),
        (
            "specification",
            "What does the specification say about {s}?",
            ("specification", "must", "requires"),
        ),
        (
            "pitfalls",
            "What pitfalls and limitations come with {s}?",
            ("limitation", "caveat", "error"),
        ),
        ("alternatives", "Which alternatives to {s} exist?", ("alternative", "instead")),
    ),
    "rationale": (
        ("design", "What do the documents specify about {s}?", ("specification", "defines")),
        (
            "alternatives",
            "Which alternatives to {s} were considered or rejected?",
            ("alternative", "rejected", "instead"),
        ),
        (
            "tradeoffs",
            "Which trade-offs and backwards-compatibility costs came with {s}?",
            ("backwards", "compatibility", "cost"),
        ),
        ("usage", "How do programs use {s}?", ("example", "usage")),
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
        ("future", "What changes to {s} are planned or deferred?", ("future", "deferred", "plan")),
    ),
}
"""Facets after the first sub-question, which is always the question itself. The subject is
always the object of a verb or a preposition, so no template needs it to agree in number."""


def as_question(text: str) -> str:
    """The text as one sentence: capitalized, closed by its own mark, else by "?" when it opens
    like a question and "." when it does not ("Compare X and Y.")."""
    text = " ".join(text.split())
    if not text:
        return text
    text = text[:1].upper() + text[1:]
    if text[-1] in "?.!":
        return text
    return text + ("?" if _LEAD.match(text) and not _IMPERATIVE.match(text) else ".")


_IMPERATIVE = re.compile(
    r"^\s*(please\s+)?(explain|describe|tell|show|give|summari[sz]e|compare|list)\b", re.I
)


def sub_questions(
    question_plan: QuestionPlan, limit: int
) -> list[tuple[str, str, tuple[str, ...]]]:
    """(facet, sub-question text, facet terms), at most ``limit``: the question itself first,
    then the kind's facets — none when the question has no subject (``plan``)."""
    planned: list[tuple[str, str, tuple[str, ...]]] = [
        ("question", as_question(question_plan.question), ())
    ]
    if not question_plan.subject:
        return planned
    parts = question_plan.parts
    words = {
        "s": question_plan.subject,
        "a": parts[0],
        "b": parts[1] if len(parts) > 1 else parts[0],
    }
    for facet, template, terms in TEMPLATES[question_plan.kind][: max(0, limit - 1)]:
        text = template.format(**words)
        planned.append((facet, text[:1].upper() + text[1:], terms))
    return planned
