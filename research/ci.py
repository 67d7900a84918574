"""The Confidence Index: a weighted sum that only ranks rounds and measures regression (ADR-007 §4.3).

Three weight vectors over (coverage, source_quality, agreement, verification,
recency): ``proposed`` (ADR-003's), ``equal`` (Dawes 1979) and ``roc`` (rank
order centroid, Barron & Barrett 1996 — ADR-007's table, normalized to sum 1).
"""

from __future__ import annotations

from research.matrix import DIMENSIONS, DimensionScores

Weights = tuple[float, float, float, float, float]

_ROC_TABLE: Weights = (0.46, 0.21, 0.21, 0.21, 0.11)

WEIGHT_SETS: dict[str, Weights] = {
    "proposed": (0.25, 0.20, 0.20, 0.20, 0.15),
    "equal": (0.20, 0.20, 0.20, 0.20, 0.20),
    "roc": tuple(round(w / sum(_ROC_TABLE), 6) for w in _ROC_TABLE),  # type: ignore[dict-item]
}


def weights_named(name: str) -> Weights:
    try:
        return WEIGHT_SETS[name]
    except KeyError:
        raise ValueError(
            f"unknown tiebreaker weights {name!r}; use one of {', '.join(WEIGHT_SETS)}"
        ) from None


def normalized(weights: tuple[float, ...]) -> Weights:
    total = sum(weights)
    return tuple(w / total for w in weights)  # type: ignore[return-value]


def confidence_index(scores: DimensionScores, weights: Weights) -> float:
    values = scores.as_dict()
    return round(sum(w * values[d] for w, d in zip(weights, DIMENSIONS)), 6)
