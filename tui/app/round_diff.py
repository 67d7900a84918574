"""What changed between two research rounds: new evidence, claims added or dropped, dimensions.

Plain Python over a :class:`RunView`: a round's evidence is the research state the round ended
with — of the steps whose outputs carry a ``state`` for that round, the one with the highest
``revision`` (research.state: each stage of a round advances it) — and its scores are the
rounds matrix's (``research.round_scored``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from research.events import DimensionCell
from tui.app.run_state import RunView


def score_delta(before: float | None, after: float | None) -> float | None:
    """How a score moved between two rounds (None when either round lacks it)."""
    return None if before is None or after is None else after - before


@dataclass(frozen=True)
class DimensionChange:
    name: str
    before: DimensionCell | None
    after: DimensionCell | None

    @property
    def delta(self) -> float | None:
        return score_delta(
            self.before.score if self.before else None, self.after.score if self.after else None
        )


@dataclass(frozen=True)
class RoundDiff:
    before: int
    after: int
    new_sources: list[str] = field(default_factory=list)
    """Titles (or ids) of the sources first cited in the later round."""
    new_passages: int = 0
    claims_added: list[str] = field(default_factory=list)
    claims_dropped: list[str] = field(default_factory=list)
    dimensions: list[DimensionChange] = field(default_factory=list)
    ci: tuple[float | None, float | None] = (None, None)
    evidence_known: bool = True
    """False when the run's steps left no research state for one of the rounds."""


def round_evidence(view: RunView) -> dict[int, Mapping[str, Any]]:
    """Each round's evidence map (JSON form) as the round ended."""
    best: dict[int, tuple[int, Mapping[str, Any]]] = {}
    for step_id in view.order:
        state = view.steps[step_id].outputs.get("state")
        if not isinstance(state, Mapping) or not isinstance(state.get("evidence"), Mapping):
            continue
        number, revision = state.get("round"), state.get("revision")
        if not isinstance(number, int) or not isinstance(revision, int) or number < 1:
            continue
        if number not in best or revision >= best[number][0]:
            best[number] = (revision, state["evidence"])
    return {number: evidence for number, (_, evidence) in best.items()}


def diff_rounds(view: RunView, before: int, after: int) -> RoundDiff:
    evidence = round_evidence(view)
    old, new = evidence.get(before), evidence.get(after)
    dimensions = _dimension_changes(view, before, after)
    ci = (_ci(view, before), _ci(view, after))
    if old is None or new is None:
        return RoundDiff(before, after, dimensions=dimensions, ci=ci, evidence_known=False)
    old_sources, new_sources = _mapping(old, "sources"), _mapping(new, "sources")
    old_claims, new_claims = _claims(old), _claims(new)
    return RoundDiff(
        before,
        after,
        new_sources=[
            str(_field(source, "title") or source_id)
            for source_id, source in new_sources.items()
            if source_id not in old_sources
        ],
        new_passages=len(set(_mapping(new, "passages")) - set(_mapping(old, "passages"))),
        claims_added=[text for key, text in new_claims.items() if key not in old_claims],
        claims_dropped=[text for key, text in old_claims.items() if key not in new_claims],
        dimensions=dimensions,
        ci=ci,
    )


def _dimension_changes(view: RunView, before: int, after: int) -> list[DimensionChange]:
    old = view.rounds.get(before)
    new = view.rounds.get(after)
    names = list(
        dict.fromkeys([*(old.dimensions if old else {}), *(new.dimensions if new else {})])
    )
    return [
        DimensionChange(
            name,
            old.dimensions.get(name) if old else None,
            new.dimensions.get(name) if new else None,
        )
        for name in names
    ]


def _ci(view: RunView, number: int) -> float | None:
    scored = view.rounds.get(number)
    return scored.ci if scored else None


def _mapping(evidence: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = evidence.get(name)
    return value if isinstance(value, Mapping) else {}


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else None


def _claims(evidence: Mapping[str, Any]) -> dict[str, str]:
    """Claim id (else its text) → its text, in the map's order."""
    claims = evidence.get("claims")
    found: dict[str, str] = {}
    for claim in claims if isinstance(claims, list) else []:
        text = str(_field(claim, "text") or "")
        key = str(_field(claim, "id") or text)
        if key:
            found[key] = text or key
    return found
