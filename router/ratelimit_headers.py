"""What every provider's rate-limit signals become (:class:`RateLimitInfo`), and the value
formats they are written in (ADR-002 §E).

Each adapter parses its own kind's signals with these (its ``rate_limits``): OpenAI-style
``x-ratelimit-*`` headers with Go-style durations, Anthropic's with RFC 3339 instants,
Gemini's error-body ``RetryInfo``. Shared by all: ``Retry-After`` (delay-seconds or an
HTTP-date) and ``retry-after-ms`` (milliseconds, preferred when both are present, it is the
more precise) — :func:`parse_generic` reads only those.

A malformed value is unknown (``None``), never an exception: a provider that
changes its header format degrades the router to its configured limits, it does
not break it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)(ns|us|µs|ms|h|m|s)")
_NUMBER = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


@dataclass(frozen=True, slots=True)
class LimitReading:
    """One dimension (requests or tokens) as a provider reported it; ``None`` = not reported or unusable."""

    limit: int | None = None
    remaining: int | None = None
    reset_s: float | None = None

    @property
    def known(self) -> bool:
        return self.limit is not None or self.remaining is not None or self.reset_s is not None


@dataclass(frozen=True, slots=True)
class RateLimitInfo:
    retry_after_s: float | None = None
    requests: LimitReading = field(default_factory=LimitReading)
    tokens: LimitReading = field(default_factory=LimitReading)
    quota_exhausted: bool = False  # e.g. a Gemini per-day quota violation


def _finite_nonnegative(value: float) -> float | None:
    if math.isnan(value) or math.isinf(value) or value < 0:
        return None
    return value


def parse_seconds(value: str | None) -> float | None:
    """A plain non-negative number of seconds (``"2"``, ``"1.5"``)."""
    if value is None:
        return None
    text = value.strip()
    if not _NUMBER.fullmatch(text):
        return None
    return _finite_nonnegative(float(text))


def parse_retry_after(value: str | None, now_wall: float) -> float | None:
    """``Retry-After``: delay-seconds, or an HTTP-date (relative to ``now_wall``; past dates → 0)."""
    if value is None:
        return None
    seconds = parse_seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now_wall)


def parse_retry_after_ms(value: str | None) -> float | None:
    ms = parse_seconds(value)
    return None if ms is None else ms / 1000.0


def parse_go_duration(value: str | None) -> float | None:
    """Go-style durations as OpenAI sends them: ``6m0s``, ``1h2m3.5s``, ``12ms``; a bare number is seconds."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    plain = parse_seconds(text)
    if plain is not None:
        return plain
    position = 0
    total = 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(text) or position == 0:
        return None
    return _finite_nonnegative(total)


def parse_rfc3339_delay(value: str | None, now_wall: float) -> float | None:
    """Seconds from ``now_wall`` until an RFC 3339 instant (``2025-01-01T00:00:30Z``); past → 0."""
    if value is None:
        return None
    text = value.strip()
    if not text or "T" not in text.upper():
        return None
    try:
        when = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now_wall)


def parse_count(value: str | None, *, ignore_non_positive: bool = False) -> int | None:
    """A non-negative integer count; ``ignore_non_positive`` drops 0 and -1 (Azure's meaningless values)."""
    if value is None:
        return None
    text = value.strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        return None
    number = int(text)
    if number < 0 or (ignore_non_positive and number <= 0):
        return None
    return number


def lower_keys(headers: Mapping[str, str]) -> dict[str, str]:
    return {key.lower(): value for key, value in headers.items()}


def retry_after(h: Mapping[str, str], now_wall: float) -> float | None:
    """The delay ``retry-after-ms`` or ``Retry-After`` asks for (``h``: lower-cased keys)."""
    precise = parse_retry_after_ms(h.get("retry-after-ms"))
    if precise is not None:
        return precise
    return parse_retry_after(h.get("retry-after"), now_wall)


def parse_generic(headers: Mapping[str, str], now_wall: float) -> RateLimitInfo:
    return RateLimitInfo(retry_after_s=retry_after(lower_keys(headers), now_wall))
