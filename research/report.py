"""The delivered artifacts: report.md, quality.yaml and rag_package.jsonl (ADR-003 §E).

Everything here is built mechanically from the evidence, the synthesis
(which only orders claims) and the coalesce result, so every sentence of the
report is a claim with its citation, and every citation names a passage that
contains the claim's quoted text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from engine.model_answers import ModelAnswers, disclosure
from plumbing.folder_writes import write_text_into
from plumbing.frozen import Frozen
from plumbing.untrusted_text import for_document, json_for_terminal
from plumbing.workspace import QUALITY_FILE, RAG_PACKAGE_FILE, REPORT_FILE
from research.brief import answer_lines, source_facts
from research.coalesce import DISCLAIMERS, TARGET_CI, CoalesceResult
from research.evidence import Claim, EvidenceMap, Source
from research.policy import RoundRecord
from research.references import link_key
from research.relevance import RELEVANCE_FLOOR
from research.sources import SourcePolicy
from research.text import SELF_REFERENCE, depends_on_context

if TYPE_CHECKING:
    from research.tasks import SynthesisAnswer

FLAGGED_STATUSES = frozenset({"superseded", "rejected", "withdrawn", "deferred"})
"""Statuses a citation must show where it is used: the document is not in force."""
GATE_TARGET = (
    "every dimension High (>= 0.75) or better, recent sources >= the floor where recency is required, "
    "no critical contradiction (ADR-007)"
)


class Citation(Frozen):
    number: int
    claim_id: str
    claim: str
    quote: str
    passage_id: str
    source_id: str
    title: str
    verified: bool
    relevance: float = 1.0
    """The cited passage's relevance to the question (research.relevance)."""


def ordered_claims(
    evidence: EvidenceMap, synthesis: SynthesisAnswer | None
) -> dict[str, list[Claim]]:
    """Claims per sub-question in the synthesis's order (evidence order where it named none).

    Only claims that stand on their own are kept: "This PEP …" is rewritten to name the
    document, and a claim that leans on a sentence it does not carry ("However, …") is left out.
    """
    by_id = {c.id: c for c in evidence.claims}
    result: dict[str, list[Claim]] = {}
    chosen = {s.sub_question: s.claim_ids for s in synthesis.sections} if synthesis else {}
    for question in evidence.sub_questions:
        ids = [cid for cid in chosen.get(question.id, []) if cid in by_id]
        if not ids and not synthesis:
            ids = [c.id for c in evidence.claims if c.sub_question == question.id]
        standing = (standalone(by_id[cid], evidence) for cid in ids)
        result[question.id] = [claim for claim in standing if claim is not None]
    return result


def document_label(source: Source | None, source_id: str = "") -> str:
    """How the report names a document: ``PEP 634`` from its id when numbered, else its title."""
    key = link_key(source.id if source else source_id)
    prefix, _, number = key.partition(" ")
    if number.isdigit():
        return f"{prefix.upper()} {number}"
    return f"“{source.title}”" if source and source.title else source_id


def standalone(claim: Claim, evidence: EvidenceMap) -> Claim | None:
    """The claim as a sentence that stands alone, or None when it cannot."""
    text = claim.text.strip()
    source = evidence.sources.get(claim.source_ids[0]) if claim.source_ids else None
    match = SELF_REFERENCE.match(text)
    if match:
        return claim.model_copy(update={"text": document_label(source) + text[match.end() :]})
    if depends_on_context(text):
        return None
    return claim


def status_note(source: Source | None) -> str:
    """What a reader must know about a cited document that is not in force, e.g. superseded."""
    if source is None:
        return ""
    status = source.status.strip().lower()
    successor = ""
    if source.superseded_by:
        own_prefix, _, own_number = link_key(source.id).partition(" ")
        prefix = own_prefix.upper() if own_number.isdigit() else ""
        named = [
            f"{prefix} {part}" if part.isdigit() and prefix else part
            for part in (p.strip() for p in source.superseded_by.split(","))
            if part
        ]
        successor = "superseded by " + " and ".join(named)
    if status == "superseded":
        return successor or "superseded"
    if status in FLAGGED_STATUSES:
        return status + (f", later {successor}" if successor else "")
    return f"later {successor}" if successor else ""


def cited(number: int, claim: Claim, evidence: EvidenceMap) -> str:
    """A claim as the brief writes it: text, its source's label, date and relevance, citation,
    unverified mark, status of its source."""
    source = evidence.sources.get(claim.source_ids[0]) if claim.source_ids else None
    note = status_note(source)
    passage = evidence.first_passage(claim)
    facts = source_facts(
        source,
        passage.relevance if passage else 0.0,
        document_label(source, claim.source_ids[0] if claim.source_ids else ""),
        passage.section if passage else "",
    )
    return one_line(
        f"{claim.text} — {facts} [{number}]"
        + ("" if claim.verified else " [unverified]")
        + (f" ({document_label(source)}, {note})" if note else "")
    )


def citations_for(evidence: EvidenceMap, sections: dict[str, list[Claim]]) -> list[Citation]:
    citations: list[Citation] = []
    for claims in sections.values():
        for claim in claims:
            source = evidence.sources.get(claim.source_ids[0]) if claim.source_ids else None
            passage = evidence.first_passage(claim)
            citations.append(
                Citation(
                    number=len(citations) + 1,
                    relevance=passage.relevance if passage else 0.0,
                    claim_id=claim.id,
                    claim=claim.text,
                    quote=claim.quote,
                    passage_id=claim.passage_ids[0],
                    source_id=claim.source_ids[0] if claim.source_ids else "",
                    title=source.title if source else "",
                    verified=bool(claim.verified),
                )
            )
    return citations


def quality_metadata(
    coalesced: CoalesceResult,
    records: list[RoundRecord],
    policy: SourcePolicy,
    stop_reason: str,
    delivered: bool,
    answers: ModelAnswers | None = None,
) -> dict[str, Any]:
    """quality.yaml's content; ``answers``: who answered the run's model calls (none: no call)."""
    answers = answers or ModelAnswers()
    return {
        "confidence_level": coalesced.confidence_level,
        "best_ci_achieved": round(coalesced.best_ci, 4),
        "target": {"gate": GATE_TARGET, "ci": TARGET_CI},
        "selected_round": coalesced.selected_round,
        "rounds_completed": len(records),
        "failing_metrics": coalesced.failing_metrics,
        "passing_metrics": coalesced.passing_metrics,
        "stop_reason": stop_reason,
        "as_of": policy.as_of,
        "domain": policy.domain,
        "recency_window_days": policy.window_days,
        "recency_window": policy.window_rationale,
        "tiebreaker_weights": coalesced.weights,
        "vetoed_rounds": coalesced.vetoed_rounds,
        "delivered": delivered,
        "model_answers": {
            "total": answers.answers,
            "builtin_fallback": answers.fallback,
            "fallback_steps": list(answers.fallback_steps),
            "note": disclosure(answers),
        },
        "rounds": [
            {
                "round": r.round,
                "kind": r.kind,
                "ci": round(r.ci, 6),
                "ci_change": r.ci_change,
                "gate_passed": r.gate_passed,
                "recent_sources": r.recent_sources,
                "recent_floor": r.recent_floor,
                "critical_contradictions": r.critical_contradictions,
                "decision": r.decision,
                "stop_reason": r.stop_reason,
                "remediation": r.remediation,
                "movable": list(r.movable),
                "dimensions": r.scores.matrix(),
                "changes": r.changes,
            }
            for r in records
        ],
    }


def render_report(
    evidence: EvidenceMap,
    synthesis: SynthesisAnswer | None,
    citations: list[Citation],
    sections: dict[str, list[Claim]],
    quality: dict[str, Any],
    delivered: bool,
    kind: str = "definition",
    subject: str = "",
) -> str:
    """report.md: the answer (an evidence brief, or a model's checked prose), Sources, then
    Quality (research.brief)."""
    level = quality["confidence_level"]
    lines = [f"# {one_line(evidence.query)}", ""]
    if DISCLAIMERS[level]:
        lines += [f"> **{DISCLAIMERS[level]}**", ""]
    fallback = quality["model_answers"]["note"]
    if fallback:
        lines += [
            f"> **{fallback}: the offline extractive model's work, not the configured"
            " provider's.**",
            "",
        ]
    if not delivered:
        relevant = sum(1 for p in evidence.passages.values() if p.relevance >= RELEVANCE_FLOOR)
        lines += [
            "Delivery was withheld: the evidence is insufficient and no one asked for it to be delivered.",
            "The quality section below says what fell short.",
            "",
        ]
        if not relevant:
            lines += [f"_The corpus has little on {subject or evidence.query}._", ""]
    else:
        lines += _answer(evidence, synthesis, citations, sections, kind, subject)
    lines += [
        "## Quality",
        "",
        f"- Confidence level: **{level}** (selected round R{quality['selected_round']} of "
        f"{quality['rounds_completed']}, best CI {quality['best_ci_achieved']}, weights "
        f"{quality['tiebreaker_weights']})",
        f"- Stop reason: {quality['stop_reason']}",
        f"- As of {quality['as_of']}; recency: {quality['recency_window']}",
        f"- Model answers: {_who_answered(quality['model_answers'])}",
    ]
    if quality["failing_metrics"]:
        lines.append(
            "- Failing metrics: "
            + ", ".join(f"{k} {v}" for k, v in quality["failing_metrics"].items())
        )
    if quality["passing_metrics"]:
        lines.append(
            "- Passing metrics: "
            + ", ".join(f"{k} {v}" for k, v in quality["passing_metrics"].items())
        )
    lines.append("")
    lines += [
        "| Round | Kind | Coverage | Source quality | Agreement | Verification | Recency | CI | Recent | "
        "Critical | Gate | Decision |",
        "|" + "---|" * 12,
    ]
    for r in quality["rounds"]:
        dims = r["dimensions"]
        changes = r.get("changes") or {}
        cells = " | ".join(
            f"{dims[d]['score']:.2f} {dims[d]['tier']}{signed(changes.get(d))}"
            for d in ("coverage", "source_quality", "agreement", "verification", "recency")
        )
        lines.append(
            f"| R{r['round']} | {r['kind']} | {cells} | {r['ci']:.4f}{signed(r.get('ci_change'))}"
            f" | {r['recent_sources']}/"
            f"{r['recent_floor']} | {r['critical_contradictions']} | {'pass' if r['gate_passed'] else 'fail'}"
            f" | {r['decision']}{' (' + r['stop_reason'] + ')' if r['stop_reason'] else ''} |"
        )
    lines.append("")
    # Whole, once more: a backtick left in one claim could pair with another's (for_document).
    return for_document("\n".join(lines))


def one_line(text: str) -> str:
    """Text from a document or a model as one line of the report (a heading, a list item, a
    quote): its line breaks would start new Markdown blocks, its control characters go, and its
    Markdown reads as text (plumbing.untrusted_text.for_document) — so a line's own marker
    (``1. ``, ``- ``) goes before it, not in it."""
    return for_document(text, one_line=True)


def _who_answered(answers: dict[str, Any]) -> str:
    """The report's line on who wrote its model answers: the fallback note in bold when the
    built-in model answered any of them."""
    if answers["note"]:
        return f"**{answers['note']}**"
    return f"{answers['total']}, none from the built-in fallback"


def signed(change: float | None) -> str:
    """A change from the previous round as `` (+0.0125)``: every digit up to six that it needs."""
    if change is None:
        return ""
    if change == 0:
        return " (±0)"
    return f" ({change:+.6f}".rstrip("0") + ")"


def _answer(
    evidence: EvidenceMap,
    synthesis: SynthesisAnswer | None,
    citations: list[Citation],
    sections: dict[str, list[Claim]],
    kind: str,
    subject: str,
) -> list[str]:
    number = {c.claim_id: c.number for c in citations}
    lines = answer_lines(evidence, number, sections, synthesis, subject or evidence.query, cited)
    if kind == "history":
        lines += _timeline(evidence, citations)
    lines += ["## Sources", ""]
    for citation in citations:
        source = evidence.sources.get(citation.source_id)
        facts = [document_label(source, citation.source_id)]
        if source and source.status:
            facts.append(source.status)
        note = status_note(source)
        if note:
            facts.append(note)
        if source and source.latest_date:
            facts.append(source.latest_date)
        facts.append(f"relevance {citation.relevance:.2f}")
        lines += [
            f"{citation.number}. "
            + one_line(
                f"**{citation.title or citation.source_id}** "
                f"({'; '.join(facts)}) — `{citation.passage_id}`"
            ),
            "",
            f"   > {one_line(citation.quote)}",
            "",
        ]
    return lines


def _timeline(evidence: EvidenceMap, citations: list[Citation]) -> list[str]:
    """The cited documents in the order they were written, with what became of them."""
    numbers: dict[str, list[int]] = {}
    for citation in citations:
        numbers.setdefault(citation.source_id, []).append(citation.number)
    dated = sorted(
        (source.published_at or source.latest_date or "", source.id)
        for source in (evidence.sources.get(sid) for sid in numbers)
        if source is not None and (source.published_at or source.latest_date)
    )
    if len(dated) < 2:
        return []
    lines = ["## Timeline", ""]
    for day, source_id in dated:
        source = evidence.sources[source_id]
        note = status_note(source)
        status = source.status + (f", {note}" if note else "") if source.status else note
        refs = ", ".join(str(n) for n in numbers[source_id])
        lines.append(
            "- "
            + one_line(
                f"**{day}** — {document_label(source)}, {source.title}"
                + (f" ({status})" if status else "")
                + f" [{refs}]"
            )
        )
    return [*lines, ""]


def rag_chunks(
    evidence: EvidenceMap, citations: list[Citation], selected_round: int
) -> list[dict[str, Any]]:
    """One chunk per cited passage, with its source, a citation line and metadata, ready to index."""
    claims_by_passage: dict[str, list[Claim]] = {}
    for claim in evidence.claims:
        for pid in claim.passage_ids:
            claims_by_passage.setdefault(pid, []).append(claim)
    chunks = []
    for pid in sorted({c.passage_id for c in citations}):
        passage = evidence.passages.get(pid)
        if passage is None:
            continue
        source = evidence.sources.get(passage.source_id)
        claims = claims_by_passage.get(pid, [])
        chunks.append(
            {
                "id": pid,
                "text": passage.text,
                "source": {
                    "id": passage.source_id,
                    "uri": source.uri if source else "",
                    "title": source.title if source else "",
                    "published": source.published_at if source else None,
                    "updated": source.updated_at if source else None,
                    "status": source.status if source else "",
                    "authority": source.authority if source else None,
                },
                "citation": f"{source.title if source else passage.source_id} ({pid})",
                "metadata": {
                    "selected_round": selected_round,
                    "section": passage.section,
                    "sub_questions": sorted({c.sub_question for c in claims}),
                    "claim_ids": [c.id for c in claims],
                    "verified": any(c.verified for c in claims),
                },
            }
        )
    return chunks


def write_artifacts(
    run_dir: Path, report: str, quality: dict[str, Any], chunks: list[dict[str, Any]]
) -> list[Path]:
    """The three files in ``run_dir``, written without following a link planted there. The
    RAG package's documents' text holds every character a terminal acts on as its JSON escape
    (``\\u009b``): the same values once parsed, nothing raw for ``cat`` to send."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return [
        write_text_into(run_dir, REPORT_FILE, report),
        write_text_into(
            run_dir, QUALITY_FILE, yaml.safe_dump(quality, sort_keys=False, allow_unicode=True)
        ),
        write_text_into(
            run_dir,
            RAG_PACKAGE_FILE,
            "".join(
                json_for_terminal(json.dumps(c, ensure_ascii=False, sort_keys=True)) + "\n"
                for c in chunks
            ),
        ),
    ]
