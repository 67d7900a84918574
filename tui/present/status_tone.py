"""The one table from a status word to its tone: what it means to a person at a glance.

Every surface colours a status through this table and styles the tone its own
way: the console printer with rich colours (tui/present/headless.py), the app with
theme variables (tui/app/status_style.py), so a theme switch recolours every
panel at once. The words are the ones a run's events report: run and step
statuses, breaker states (``provider_state``), evidence tiers, stop-gate results,
recent sources below their floor and contradiction vetoes (``research.round_scored``).
"""

from __future__ import annotations

from typing import Literal

Tone = Literal[
    "muted", "active", "attention", "caution", "good", "excellent", "disabled", "critical", "bad",
    "stopped", "plain",
]  # fmt: skip

STATUS_TONES: dict[str, Tone] = {
    # steps and runs
    "PENDING": "muted",
    "RUNNING": "active",
    "WAITING_HUMAN": "attention",
    "WAITING": "attention",
    "HELD": "caution",
    "PARTIAL": "caution",
    "STALE": "caution",
    "SUCCEEDED": "good",
    "COMPLETED": "good",
    "SKIPPED": "disabled",
    "FAILED": "critical",
    "UPSTREAM_FAILED": "bad",
    "CANCELLED": "stopped",
    # provider breakers
    "CLOSED": "good",
    "HALF_OPEN": "caution",
    "OPEN": "critical",
    # evidence tiers and the stop gate
    "ELITE": "excellent",
    "HIGH": "good",
    "MEDIUM": "caution",
    "LOW": "bad",
    "PASS": "good",
    "FAIL": "bad",
    "BELOW_FLOOR": "bad",
    "VETO": "critical",
}


def tone(status: str) -> Tone:
    """The tone of a status word, in any case; ``plain`` for a word the table does not know."""
    return STATUS_TONES.get(status.upper(), "plain")
