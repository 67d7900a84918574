"""Why a provider's breaker is in its state, in words, from its ``provider_state`` snapshots.

The event log, the headless chaos demo and its summary say it the same way: the trip's reason
(an error class at once, or a count of failures), the last error's class, HTTP status and
Retry-After, and the cooldown until the next probe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def format_cooldown(seconds: float) -> str:
    """A cooldown left: one decimal under 10 s ("3.4s"), so short (time-scaled) cooldowns
    visibly count down; whole seconds above ("28s")."""
    if round(seconds, 1) < 10:
        return f"{seconds:.1f}s"
    return f"{seconds:.0f}s"


def error_note(snapshot: Mapping[str, Any]) -> str:
    """The last error a snapshot carries: ``rate_limit, HTTP 429, Retry-After 1.2s`` ('' when none)."""
    parts: list[str] = []
    if snapshot.get("last_error"):
        parts.append(str(snapshot["last_error"]))
    status = snapshot.get("last_error_status")
    if isinstance(status, int) and not isinstance(status, bool):
        parts.append(f"HTTP {status}")
    retry_after = snapshot.get("last_error_retry_after_s")
    if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool):
        parts.append(f"Retry-After {format_cooldown(float(retry_after))}")
    return ", ".join(parts)


def why(snapshot: Mapping[str, Any], previous: str | None = None) -> str:
    """Why the breaker is in the snapshot's state, knowing the state it was in before (if known)."""
    state = snapshot.get("state")
    if state == "OPEN":
        reason = snapshot.get("open_reason")
        note = error_note(snapshot)
        if previous == "HALF_OPEN":
            return f"the probe failed ({note})" if note else "the probe failed"
        if reason and note.startswith(str(reason)):
            return f"tripped by {note}"
        if reason:
            return f"tripped by {reason}" + (f" (last error {note})" if note else "")
        return f"tripped by {note}" if note else ""
    if state == "HALF_OPEN":
        return "cooldown over: one probe may go"
    if state == "CLOSED" and previous in ("OPEN", "HALF_OPEN"):
        return "the probe succeeded: serving again"
    return ""
