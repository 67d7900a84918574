"""final_synthesis and rag_package: coalesce the rounds, compose the report, package it.

final_synthesis runs coalesce() over every scored round (best-of-N by CI,
never simply the latest), asks a person whether to deliver when the evidence
is insufficient (the headless default is to withhold), and composes the
report from the selected round's evidence. rag_package turns the cited
passages into index-ready chunks and, when the run has a folder, writes
report.md, quality.yaml and rag_package.jsonl there.
"""

from __future__ import annotations

from typing import Any

from engine.context import InterruptAnswer, InterruptRequest, StepContext
from engine.steps import step
from plumbing.frozen import Frozen
from research.ci import weights_named
from research.coalesce import CoalesceResult, coalesce
from research.evidence import Claim, EvidenceMap
from research.report import (
    Citation,
    citations_for,
    ordered_claims,
    quality_metadata,
    rag_chunks,
    render_report,
    write_artifacts,
)
from research.run_folders import RunFolders
from research.state import supervisor_states
from research.steps.common import RoundInput


class SynthesisOutput(Frozen):
    report: str
    quality: dict[str, Any]
    citations: list[Citation]
    selected_round: int
    confidence_level: str
    delivered: bool
    evidence: EvidenceMap
    refusal: str = ""


@step("research.final_synthesis")
async def final_synthesis(ctx: StepContext, inp: RoundInput) -> SynthesisOutput:
    """Coalesce the rounds (best-of-N by CI), decide delivery, compose the cited report."""
    from research.events import COALESCED, validated
    from research.pipeline import ModelPipeline, ModelStage
    from research.tasks import SynthesisAnswer

    states = supervisor_states(ctx)
    if not states:
        raise RuntimeError(f"{ctx.step_id}: no scored round upstream")
    last = states[max(states)]
    records = list(last.rounds)
    coalesced: CoalesceResult = coalesce(
        records, weights_named(last.params.weights), last.params.weights
    )
    stop_reason = records[-1].stop_reason or "max_rounds"
    ctx.emit(
        COALESCED,
        validated(
            COALESCED,
            selected_round=coalesced.selected_round,
            confidence_level=coalesced.confidence_level,
            best_ci=coalesced.best_ci,
            weights=coalesced.weights,
            stop_reason=stop_reason,
        ),
    )
    delivered = True
    if coalesced.confidence_level == "insufficient":
        answer = await ctx.interrupt(
            InterruptRequest(
                kind="delivery",
                prompt=(
                    f"The evidence is insufficient (best CI {coalesced.best_ci:.2f}, round "
                    f"R{coalesced.selected_round}). Deliver the report anyway, marked for human review?"
                ),
                payload={
                    "best_ci": coalesced.best_ci,
                    "failing_metrics": coalesced.failing_metrics,
                },
                options=["approve", "reject"],
                default=InterruptAnswer(
                    action="reject", note="insufficient evidence is delivered only on request"
                ),
            )
        )
        delivered = answer.action == "approve"
    selected = states.get(coalesced.selected_round, last)
    evidence = selected.evidence
    synthesis: SynthesisAnswer | None = None
    refusal = ""
    if delivered and evidence.claims:

        def synthesis_claim(claim: Claim) -> dict[str, Any]:
            passage = evidence.first_passage(claim)
            return {
                "id": claim.id,
                "text": claim.text,
                "sub_question": claim.sub_question,
                "verified": claim.verified,
                "source_ids": claim.source_ids,
                "section": passage.section if passage else "",
                "relevance": passage.relevance if passage else 0.0,
            }

        def build(claims: list[Claim], _r: Any) -> dict[str, Any]:
            return {
                "query": evidence.query,
                "sub_questions": [q.model_dump() for q in evidence.sub_questions],
                "claims": [synthesis_claim(c) for c in claims],
                "confidence_level": coalesced.confidence_level,
                "max_per_section": 4,
            }

        result = await ModelPipeline(ctx).run(
            ModelStage(
                task="research.synthesize",
                schema=SynthesisAnswer,
                claims=evidence.claims,
                evidence=evidence,
                build_inputs=build,
                trim="claims",
                output_tokens=1200,
                require_claims=True,
            )
        )
        synthesis = result.answer if isinstance(result.answer, SynthesisAnswer) else None
        refusal = result.note()
    quality = quality_metadata(
        coalesced, records, selected.policy, stop_reason, delivered, ctx.model_answers()
    )
    sections = ordered_claims(evidence, synthesis) if delivered else {}
    citations = citations_for(evidence, sections)
    report = render_report(
        evidence,
        synthesis,
        citations,
        sections,
        quality,
        delivered,
        kind=selected.kind,
        subject=selected.subject,
    )
    return SynthesisOutput(
        report=report,
        quality=quality,
        citations=citations,
        selected_round=coalesced.selected_round,
        confidence_level=coalesced.confidence_level,
        delivered=delivered,
        evidence=evidence,
        refusal=refusal,
    )


class RagPackageOutput(Frozen):
    chunks: list[dict[str, Any]]
    count: int
    files: list[str]


@step("research.rag_package")
async def rag_package(ctx: StepContext, inp: RoundInput) -> RagPackageOutput:
    """Chunks of the cited passages with source, citation and metadata; the run's files written."""
    synthesis = next(
        (
            SynthesisOutput.model_validate(o)
            for o in ctx.upstream.values()
            if o and "report" in o and "citations" in o
        ),
        None,
    )
    if synthesis is None:
        raise RuntimeError(f"{ctx.step_id}: needs the outputs of research.final_synthesis upstream")
    chunks = rag_chunks(synthesis.evidence, synthesis.citations, synthesis.selected_round)
    files: list[str] = []
    folders = ctx.services.app.get(RunFolders)
    if folders is not None:
        written = write_artifacts(
            folders.of(ctx.run_id), synthesis.report, synthesis.quality, chunks
        )
        files = [str(p) for p in written]
    return RagPackageOutput(chunks=chunks, count=len(chunks), files=files)
