"""Pieces every research step shares: the empty input model and passage shaping."""

from __future__ import annotations

from typing import Any

from plumbing.frozen import Frozen
from research.evidence import EvidenceMap, Passage, Source
from research.sources import authority_of

__all__ = ["RoundInput", "passage_from_hit", "passage_inputs", "source_from_hit"]


class RoundInput(Frozen):
    """Round steps take no declared inputs: they read the research state upstream."""


def source_from_hit(hit: dict[str, Any], round_number: int) -> Source:
    return Source(
        id=hit["source_id"],
        uri=hit.get("uri", ""),
        title=hit.get("title", ""),
        published_at=hit.get("published"),
        updated_at=hit.get("updated"),
        status=hit.get("status", ""),
        kind=hit.get("kind", "document"),
        authority=authority_of(hit.get("status", ""), hit.get("kind", "")),
        superseded_by=hit.get("superseded_by", ""),
        round=round_number,
    )


def passage_from_hit(
    hit: dict[str, Any], round_number: int, sub_question: str = "", query: str = ""
) -> Passage:
    return Passage(
        id=hit["passage_id"],
        source_id=hit["source_id"],
        text=hit["text"],
        section=hit.get("section", ""),
        query=query,
        sub_question=sub_question,
        round=round_number,
        score=float(hit.get("score", 0.0)),
        relevance=float(hit.get("relevance", 1.0)),
    )


def passage_inputs(evidence: EvidenceMap, passages: list[Passage]) -> list[dict[str, Any]]:
    """Passages as the model sees them: id, source, title, status, authority, section and text."""
    shaped = []
    for passage in passages:
        source = evidence.sources.get(passage.source_id)
        shaped.append(
            {
                "id": passage.id,
                "source_id": passage.source_id,
                "title": source.title if source else "",
                "status": source.status if source else "",
                "authority": source.authority if source else 0.5,
                "relevance": passage.relevance,
                "sub_question": passage.sub_question,
                "section": passage.section,
                "text": passage.text,
            }
        )
    return shaped
