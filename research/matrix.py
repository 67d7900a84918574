"""The ADR-007 classification matrix: five dimensions, each classified on its own.

Tiers: Elite ≥ 0.90, High ≥ 0.75, Medium ≥ 0.50, Low below. No dimension can
make up for another (the matrix is non-compensatory); the CI weighted sum
lives in :mod:`research.coalesce` and only ranks rounds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from plumbing.frozen import Frozen

Tier = Literal["Elite", "High", "Medium", "Low"]
Dimension = Literal["coverage", "source_quality", "agreement", "verification", "recency"]

DIMENSIONS: tuple[Dimension, ...] = (
    "coverage",
    "source_quality",
    "agreement",
    "verification",
    "recency",
)
TIER_FLOORS: tuple[tuple[Tier, float], ...] = (("Elite", 0.90), ("High", 0.75), ("Medium", 0.50))
TIER_RANK: dict[Tier, int] = {"Low": 0, "Medium": 1, "High": 2, "Elite": 3}
GATE_TIER: Tier = "High"

_EPSILON = 1e-9
"""Scores are ratios of small integers; 0.75 computed as 3/4 must count as High."""


def tier_of(score: float) -> Tier:
    for tier, floor in TIER_FLOORS:
        if score + _EPSILON >= floor:
            return tier
    return "Low"


class DimensionScores(Frozen):
    coverage: float = Field(ge=0.0, le=1.0)
    source_quality: float = Field(ge=0.0, le=1.0)
    agreement: float = Field(ge=0.0, le=1.0)
    verification: float = Field(ge=0.0, le=1.0)
    recency: float = Field(ge=0.0, le=1.0)

    def as_dict(self) -> dict[str, float]:
        return {d: getattr(self, d) for d in DIMENSIONS}

    def tiers(self) -> dict[str, Tier]:
        return {d: tier_of(getattr(self, d)) for d in DIMENSIONS}

    def below(self, tier: Tier = GATE_TIER) -> list[str]:
        """Dimensions classified under ``tier``, in matrix order."""
        return [d for d, t in self.tiers().items() if TIER_RANK[t] < TIER_RANK[tier]]

    def all_at_least(self, tier: Tier = GATE_TIER) -> bool:
        return not self.below(tier)

    def matrix(self) -> dict[str, dict[str, float | str]]:
        """The ``research.round_scored`` shape: {dimension: {score, tier}}."""
        return {
            d: {"score": round(getattr(self, d), 4), "tier": tier_of(getattr(self, d))}
            for d in DIMENSIONS
        }
