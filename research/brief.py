"""The answering part of report.md: an evidence brief without a model, prose with one.

Without a language model the report does not pretend to be prose: it is an *evidence brief*,
labelled extractive — per sub-question the most relevant quoted statements, each with its
source, date, status note and relevance, and a short summary made only of the best-supported
statements. With a model, the model's prose (``SynthesisSection.prose``) is used, sentence by
sentence, and only where every sentence closes with a citation of a claim chosen for that
section (``[claim id]``, rewritten to the report's ``[n]``): a sentence that cites nothing, or a
claim it was not given, is left out and counted — the mechanical faithfulness check. Every
citation still names a passage that holds the claim's quoted text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from plumbing.untrusted_text import for_document
from research.code_names import heading_api
from research.evidence import Claim, EvidenceMap, Source
from research.text import normalize_space

if TYPE_CHECKING:
    from research.tasks import SynthesisAnswer

BRIEF_LABEL = (
    "Evidence brief (extractive): every statement below is quoted from its source; no language"
    " model wrote this answer. Configure a model for a written answer from the same evidence."
)
THIN_SHARE = 0.5
"""Below this share of sub-questions answered by relevant evidence the brief says it is thin."""
_MARKERS = re.compile(r"\s*\[([A-Za-z0-9_.:-]+)\]")
_SENTENCE = re.compile(r"(?<=[.!?\]])\s+(?=[A-Z\"'(`*])")


def source_facts(source: Source | None, relevance: float, label: str, section: str = "") -> str:
    """``PEP 572, 2018-02-28, relevance 1.00``: how the brief names a quoted statement's source;
    ``“Python standard library: json”, § `loads`, relevance 1.00`` when the passage's section
    heading names the API the statement documents (a reference's entry)."""
    facts = [label]
    api = heading_api(section)
    if api:
        facts.append(f"§ `{api}`")
    if source and source.latest_date:
        facts.append(source.latest_date)
    facts.append(f"relevance {relevance:.2f}")
    return ", ".join(facts)


def checked_prose(prose: str, allowed: dict[str, int]) -> tuple[list[str], int]:
    """The prose's sentences that close with citations of ``allowed`` claims ({claim id: n}),
    their markers rewritten to ``[n]``; and how many sentences were left out."""
    kept: list[str] = []
    dropped = 0
    for sentence in _SENTENCE.split(normalize_space(prose)):
        if not sentence:
            continue
        body = sentence
        cited: list[str] = []
        while True:
            match = re.search(r"\s*\[([A-Za-z0-9_.:-]+)\]\s*[.!?]?$", body)
            if not match:
                break
            cited.insert(0, match.group(1))
            body = body[: match.start()]
        numbers = [allowed[c] for c in cited if c in allowed]
        if not cited or len(numbers) != len(cited) or _MARKERS.search(body):
            dropped += 1
            continue
        end = "" if body.rstrip()[-1:] in ".!?" else "."
        kept.append(f"{body.rstrip()}{end} " + " ".join(f"[{n}]" for n in numbers))
    return kept, dropped


def has_prose(synthesis: SynthesisAnswer | None) -> bool:
    return synthesis is not None and any(s.prose.strip() for s in synthesis.sections)


def answer_lines(
    evidence: EvidenceMap,
    number: dict[str, int],
    sections: dict[str, list[Claim]],
    synthesis: SynthesisAnswer | None,
    subject: str,
    cited: Callable[[int, Claim, EvidenceMap], str],
) -> list[str]:
    """The Summary and one section per sub-question (brief or checked prose); ``number``:
    each cited claim's citation number."""
    answered = sum(1 for q in evidence.sub_questions if sections.get(q.id))
    lines: list[str] = []
    thin = answered < THIN_SHARE * max(1, len(evidence.sub_questions))
    if thin:
        lines += [
            f"_The corpus has little on {for_document(subject, one_line=True)}: relevant evidence"
            f" answers {answered} of"
            f" {len(evidence.sub_questions)} sub-questions._",
            "",
        ]
    prose = has_prose(synthesis)
    if not prose:
        lines += [f"> {BRIEF_LABEL}", ""]
    lead = [claims[0] for claims in sections.values() if claims][:3]
    lines += ["## Summary", ""]
    dropped = 0
    if prose and synthesis is not None and synthesis.summary.strip():
        kept, gone = checked_prose(synthesis.summary, {c.id: number[c.id] for c in lead})
        dropped += gone
        lines += [
            for_document(" ".join(kept), one_line=True) or "No finding had evidence behind it.",
            "",
        ]
    else:
        lines += [f"- {cited(number[c.id], c, evidence)}" for c in lead] or [
            "No finding had evidence behind it."
        ]
        lines.append("")
    written = {s.sub_question: s.prose for s in synthesis.sections} if synthesis else {}
    for question in evidence.sub_questions:
        lines += [f"## {for_document(question.text, one_line=True)}", ""]
        claims = sections.get(question.id, [])
        if not claims:
            lines += ["_No relevant evidence with provenance answers this sub-question._", ""]
            continue
        if prose and written.get(question.id, "").strip():
            kept, gone = checked_prose(written[question.id], {c.id: number[c.id] for c in claims})
            dropped += gone
            if kept:
                lines += [for_document(" ".join(kept), one_line=True), ""]
                continue
        lines += [f"- {cited(number[c.id], c, evidence)}" for c in claims]
        lines.append("")
    if dropped:
        lines += [
            f"_{dropped} sentence(s) of the model's prose cited no claim it was given and were"
            " left out._",
            "",
        ]
    return lines
