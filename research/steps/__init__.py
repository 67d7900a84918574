"""Research step implementations; importing this package registers them all."""

from research.steps import analysis, delivery, intake, retrieval, supervision, verification

__all__ = ["analysis", "delivery", "intake", "retrieval", "supervision", "verification"]
