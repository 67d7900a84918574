"""The source policy: how much a source is trusted, and which window counts as recent.

Authority comes from the status a document gives itself (a Final or Active
document is trusted more than a Draft, a Rejected or a Superseded one).
The recency window comes from the ``domain`` (ADR-007 §5.4), or — with no
domain — is inferred from how fast documents matching the query get published
(the QDF idea): the window is the span that holds the most recent
``floor`` matching documents, on a ladder of round spans; when even five
years cannot hold them, the material is foundational and recency is not
required.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Literal

from pydantic import Field

from plumbing.frozen import Frozen

Domain = Literal["technology", "academic", "current_events", "finance", "reference"]
DOMAINS: tuple[str, ...] = ("technology", "academic", "current_events", "finance", "reference")

DOMAIN_WINDOW_DAYS: dict[str, int | None] = {
    "current_events": 30,
    "technology": 90,
    "academic": 730,
    "finance": 2,
    "reference": None,
}
WINDOW_LADDER_DAYS: tuple[int, ...] = (7, 30, 90, 180, 365, 730, 1095, 1825)

STATUS_AUTHORITY: dict[str, float] = {
    "final": 1.0,
    "active": 0.95,
    "accepted": 0.9,
    "provisional": 0.8,
    "published": 0.9,
    "draft": 0.6,
    "deferred": 0.5,
    "superseded": 0.5,
    "rejected": 0.35,
    "withdrawn": 0.35,
    "april fool!": 0.05,
}
UNKNOWN_STATUS_AUTHORITY = 0.7
HIGH_AUTHORITY = 0.75


class SourcePolicy(Frozen):
    """What source_policy decided for this run; every later step reads it."""

    as_of: str
    domain: str | None = None
    window_days: int | None = None
    """None: recency is not required (reference / foundational material)."""
    window_origin: Literal["domain", "inferred", "reference"] = "domain"
    window_rationale: str = ""
    min_recent_sources: int = Field(default=10, ge=0)
    min_authority: float = Field(default=0.0, ge=0.0, le=1.0)

    @property
    def recency_required(self) -> bool:
        return self.window_days is not None

    @property
    def as_of_date(self) -> date:
        return date.fromisoformat(self.as_of)

    @property
    def window_start(self) -> date | None:
        if self.window_days is None:
            return None
        return self.as_of_date - timedelta(days=self.window_days)


def authority_of(status: str, kind: str) -> float:
    base = STATUS_AUTHORITY.get(status.strip().lower(), UNKNOWN_STATUS_AUTHORITY)
    if kind == "reference" and not status:
        return 0.9
    return base


def effective_date(published: str | None, updated: str | None, as_of: date) -> date | None:
    """The latest date a document states about itself that is not after ``as_of``."""
    known = [date.fromisoformat(d) for d in (published, updated) if d]
    known = [d for d in known if d <= as_of]
    return max(known) if known else None


def infer_window(dates: list[date], as_of: date, floor: int) -> tuple[int | None, str]:
    """(window days or None, rationale) from the matching documents' dates."""
    past = sorted((d for d in dates if d <= as_of), reverse=True)
    need = max(floor, 1)
    if len(past) < need:
        return None, (
            f"only {len(past)} dated documents match the query (floor {need}); "
            "treated as reference material, recency not required"
        )
    span = (as_of - past[need - 1]).days
    for rung in WINDOW_LADDER_DAYS:
        if span <= rung:
            return rung, (
                f"the {need} most recent matching documents span {span} days; "
                f"window {rung} days from the corpus's publication rate"
            )
    return None, (
        f"the {need} most recent matching documents span {span} days (> 5 years): "
        "foundational material, recency not required"
    )


def resolve_window(
    domain: str | None, dates: list[date], as_of: date, floor: int
) -> tuple[int | None, Literal["domain", "inferred", "reference"], str]:
    if domain:
        days = DOMAIN_WINDOW_DAYS[domain]
        if days is None:
            return None, "reference", "domain reference: recency not required"
        return days, "domain", f"domain {domain}: window {days} days (ADR-007 §5.4)"
    days, rationale = infer_window(dates, as_of, floor)
    return days, ("inferred" if days is not None else "reference"), rationale
