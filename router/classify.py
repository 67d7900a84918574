"""Classification of provider failures from status codes and structured error bodies.

Decisions use the status code and the machine-readable fields of each API's
error body (OpenAI ``error.code``/``error.type``, Anthropic ``error.type``,
Gemini ``error.status`` and ``details``), never the human message — whose text
changes, and which may echo part of the API key (OpenAI's 401 does), so it is
never copied into a detail string either.

The rules here are the ones every kind shares; where a kind departs from them (a Gemini
per-day quota, GitHub's 403 rate limits, Anthropic's 503 overloads) its adapter's
``classify_error`` hook decides first.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from router.errors import ErrorClass
from router.providers.base import ProviderAdapter
from router.providers.registry import make_adapter
from router.ratelimit_headers import RateLimitInfo

_TOKEN = re.compile(r"[A-Za-z0-9_.\-]{1,48}")


def _safe_token(value: Any) -> str | None:
    """An error code fit for a detail string: a short identifier, or nothing."""
    if isinstance(value, str) and _TOKEN.fullmatch(value):
        return value
    return None


def error_fields(body: Any) -> tuple[str | None, str | None]:
    """(type-ish, code-ish) identifiers from any of the supported error body shapes."""
    if not isinstance(body, dict):
        return None, None
    error = body.get("error")
    if isinstance(error, dict):
        kind = _safe_token(error.get("type")) or _safe_token(error.get("status"))
        code = _safe_token(error.get("code")) if not isinstance(error.get("code"), int) else None
        return kind, code
    return _safe_token(body.get("type")) if body.get("type") != "error" else None, None


def classify_status(kind: str, status: int, body: Any, rate_limits: RateLimitInfo) -> ErrorClass:
    """The error class of a non-2xx answer from a provider of ``kind``."""
    return classify_answer(make_adapter(kind), status, body, rate_limits)


def classify_answer(
    adapter: ProviderAdapter, status: int, body: Any, rate_limits: RateLimitInfo
) -> ErrorClass:
    """The error class of a non-2xx answer from a provider ``adapter`` speaks to: its hook's,
    else the shared rules'."""
    special = adapter.classify_error(status, body, rate_limits)
    if special is not None:
        return special
    err_type, err_code = error_fields(body)
    markers = {m.lower() for m in (err_type, err_code) if m}

    if "overloaded_error" in markers or status == 529:
        return ErrorClass.OVERLOAD
    if status == 429 or "rate_limit_error" in markers or "rate_limit_exceeded" in markers:
        if "insufficient_quota" in markers and rate_limits.retry_after_s is None:
            return ErrorClass.QUOTA  # OpenAI spend cap: no point retrying soon
        return ErrorClass.RATE_LIMIT
    if "resource_exhausted" in markers:
        return ErrorClass.RATE_LIMIT
    if 300 <= status < 400:
        return (
            ErrorClass.PERMANENT
        )  # redirected: the base_url is wrong (redirects are never followed)
    if status in (401, 403, 404):
        return ErrorClass.PERMANENT
    if status in (408, 504) or "deadline_exceeded" in markers:
        return ErrorClass.TIMEOUT
    if status == 503 and "unavailable" in markers:
        return ErrorClass.OVERLOAD
    if status >= 500:
        return ErrorClass.SERVER
    return ErrorClass.BAD_REQUEST


def status_detail(status: int, body: Any) -> str:
    """A short, secret-free description: ``HTTP 429 rate_limit_exceeded``."""
    err_type, err_code = error_fields(body)
    parts = [f"HTTP {status}"] + [p for p in dict.fromkeys((err_type, err_code)) if p]
    return " ".join(parts)


def classify_transport_error(exc: httpx.HTTPError) -> tuple[ErrorClass, str]:
    """Map an httpx exception (no response) to a class and a detail that omits the URL."""
    if isinstance(exc, httpx.TimeoutException):
        return ErrorClass.TIMEOUT, type(exc).__name__
    return ErrorClass.CONNECTION, type(exc).__name__
