"""Error classification from status codes and structured bodies (never message text)."""

from __future__ import annotations

import httpx
import pytest

from router.classify import classify_status, classify_transport_error, status_detail
from router.errors import ErrorClass
from router.ratelimit_headers import LimitReading, RateLimitInfo

NONE = RateLimitInfo()
E = ErrorClass


@pytest.mark.parametrize(
    ("kind", "status", "body", "limits", "expected"),
    [
        (
            "openai",
            429,
            {"error": {"type": "requests", "code": "rate_limit_exceeded"}},
            RateLimitInfo(retry_after_s=2),
            E.RATE_LIMIT,
        ),
        (
            "openai",
            429,
            {"error": {"type": "insufficient_quota", "code": "insufficient_quota"}},
            NONE,
            E.QUOTA,
        ),
        (
            "openai",
            429,
            {"error": {"type": "insufficient_quota", "code": "insufficient_quota"}},
            RateLimitInfo(retry_after_s=5),
            E.RATE_LIMIT,
        ),
        (
            "openai",
            401,
            {"error": {"type": "invalid_request_error", "code": "invalid_api_key"}},
            NONE,
            E.PERMANENT,
        ),
        ("openai", 403, None, NONE, E.PERMANENT),
        ("openai", 404, {"error": {"code": "model_not_found"}}, NONE, E.PERMANENT),
        ("openai", 400, {"error": {"code": "context_length_exceeded"}}, NONE, E.BAD_REQUEST),
        ("openai", 422, None, NONE, E.BAD_REQUEST),
        ("openai", 408, None, NONE, E.TIMEOUT),
        ("openai", 504, None, NONE, E.TIMEOUT),
        ("openai", 500, {"error": {"type": "server_error"}}, NONE, E.SERVER),
        ("openai", 502, None, NONE, E.SERVER),
        ("openai", 503, None, NONE, E.SERVER),
        ("azure", 429, {"error": {"code": "429"}}, NONE, E.RATE_LIMIT),
        (
            "anthropic",
            529,
            {"type": "error", "error": {"type": "overloaded_error"}},
            NONE,
            E.OVERLOAD,
        ),
        ("anthropic", 503, None, NONE, E.OVERLOAD),
        (
            "anthropic",
            429,
            {"type": "error", "error": {"type": "rate_limit_error"}},
            NONE,
            E.RATE_LIMIT,
        ),
        ("anthropic", 500, {"type": "error", "error": {"type": "api_error"}}, NONE, E.SERVER),
        (
            "anthropic",
            401,
            {"type": "error", "error": {"type": "authentication_error"}},
            NONE,
            E.PERMANENT,
        ),
        (
            "anthropic",
            413,
            {"type": "error", "error": {"type": "request_too_large"}},
            NONE,
            E.BAD_REQUEST,
        ),
        (
            "gemini",
            429,
            {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": []}},
            NONE,
            E.RATE_LIMIT,
        ),
        (
            "gemini",
            429,
            {
                "error": {
                    "code": 429,
                    "status": "RESOURCE_EXHAUSTED",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                            "violations": [
                                {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}
                            ],
                        }
                    ],
                }
            },
            NONE,
            E.QUOTA,
        ),
        ("gemini", 503, {"error": {"code": 503, "status": "UNAVAILABLE"}}, NONE, E.OVERLOAD),
        ("gemini", 500, {"error": {"code": 500, "status": "INTERNAL"}}, NONE, E.SERVER),
        (
            "gemini",
            400,
            {
                "error": {
                    "code": 400,
                    "status": "INVALID_ARGUMENT",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": "API_KEY_INVALID",
                        }
                    ],
                }
            },
            NONE,
            E.PERMANENT,
        ),
        (
            "gemini",
            400,
            {"error": {"code": 400, "status": "INVALID_ARGUMENT"}},
            NONE,
            E.BAD_REQUEST,
        ),
        ("github", 403, None, RateLimitInfo(retry_after_s=60), E.RATE_LIMIT),
        ("github", 403, None, RateLimitInfo(requests=LimitReading(remaining=0)), E.RATE_LIMIT),
        ("github", 403, None, NONE, E.PERMANENT),
        ("ollama_native", 404, {"error": "model 'llama9' not found"}, NONE, E.PERMANENT),
        ("ollama_native", 500, {"error": "boom"}, NONE, E.SERVER),
        ("openai", 200, "not json at all", NONE, E.BAD_REQUEST),
        ("openai", 301, None, NONE, E.PERMANENT),
    ],
)
def test_classification_table(
    kind: str, status: int, body: object, limits: RateLimitInfo, expected: ErrorClass
) -> None:
    assert classify_status(kind, status, body, limits) is expected


def test_detail_never_copies_the_message() -> None:
    body = {
        "error": {
            "message": "Incorrect API key provided: sk-abc***xyz",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    detail = status_detail(401, body)
    assert detail == "HTTP 401 invalid_request_error invalid_api_key"
    assert "sk-" not in detail


def test_detail_drops_identifiers_that_are_not_identifiers() -> None:
    assert (
        status_detail(500, {"error": {"type": "has spaces and sk-secret", "code": "x" * 80}})
        == "HTTP 500"
    )


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (httpx.ReadTimeout("t"), E.TIMEOUT),
        (httpx.ConnectTimeout("t"), E.TIMEOUT),
        (httpx.PoolTimeout("t"), E.TIMEOUT),
        (httpx.ConnectError("c"), E.CONNECTION),
        (httpx.RemoteProtocolError("r"), E.CONNECTION),
        (httpx.ReadError("r"), E.CONNECTION),
    ],
)
def test_transport_errors(exc: httpx.HTTPError, expected: ErrorClass) -> None:
    error_class, detail = classify_transport_error(exc)
    assert error_class is expected and detail == type(exc).__name__
