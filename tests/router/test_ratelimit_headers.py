"""Header parsing tables for every provider format, malformed values included."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from router.providers.adapters.anthropic import parse_anthropic_headers
from router.providers.adapters.gemini import parse_gemini
from router.providers.adapters.openai_compat import parse_openai_headers
from router.ratelimit_headers import (
    LimitReading,
    parse_generic,
    parse_go_duration,
    parse_retry_after,
    parse_rfc3339_delay,
)

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2", 2.0),
        ("0", 0.0),
        (" 17 ", 17.0),
        ("1.5", 1.5),
        (formatdate(NOW + 30, usegmt=True), 30.0),
        (formatdate(NOW - 30, usegmt=True), 0.0),  # a date in the past: retry now
        ("Tue, 14 Nov 2023 22:14:20 GMT", 60.0),
        ("", None),
        ("soon", None),
        ("-5", None),
        ("nan", None),
        ("inf", None),
        ("1e3", None),
        ("Tue, 99 Nov 2023 99:99:99 GMT", None),
        (None, None),
    ],
)
def test_retry_after(value: str | None, expected: float | None) -> None:
    result = parse_retry_after(value, NOW)
    assert result == (pytest.approx(expected, abs=1.0) if expected is not None else None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("6m0s", 360.0),
        ("12ms", 0.012),
        ("1s", 1.0),
        ("0.5s", 0.5),
        ("1h2m3.5s", 3723.5),
        ("20", 20.0),
        ("250us", 0.00025),
        ("7m12.5s", 432.5),
        ("1m", 60.0),
        ("", None),
        ("abc", None),
        ("5x", None),
        ("-1s", None),
        ("1m-2s", None),
        ("s", None),
        ("1.2.3s", None),
        ("12 ms", None),
        (None, None),
    ],
)
def test_go_duration(value: str | None, expected: float | None) -> None:
    result = parse_go_duration(value)
    assert result == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2023-11-14T22:13:50Z", 30.0),
        ("2023-11-14T22:13:50.500Z", 30.5),
        ("2023-11-14T23:13:50+01:00", 30.0),
        ("2023-11-14T22:00:00Z", 0.0),
        ("2023-11-14 22:13:50", None),
        ("2023-11-14T22:13:50", None),
        ("tomorrow", None),
        ("", None),
        ("2023-13-45T99:00:00Z", None),
        (None, None),
    ],
)
def test_rfc3339(value: str | None, expected: float | None) -> None:
    result = parse_rfc3339_delay(value, NOW)
    assert result == (pytest.approx(expected) if expected is not None else None)


def test_openai_full_set() -> None:
    info = parse_openai_headers(
        {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "120ms",
            "x-ratelimit-limit-tokens": "30000",
            "x-ratelimit-remaining-tokens": "29000",
            "x-ratelimit-reset-tokens": "2s",
            "retry-after": "3",
        },
        NOW,
    )
    assert info.requests == LimitReading(500, 499, pytest.approx(0.12))
    assert info.tokens == LimitReading(30000, 29000, 2.0)
    assert info.retry_after_s == 3.0


def test_retry_after_ms_wins_over_retry_after() -> None:
    assert (
        parse_openai_headers({"retry-after": "3", "retry-after-ms": "2500"}, NOW).retry_after_s
        == 2.5
    )
    assert parse_generic({"Retry-After-Ms": "40"}, NOW).retry_after_s == pytest.approx(0.04)


@pytest.mark.parametrize(
    ("headers", "requests", "tokens"),
    [
        (
            {"x-ratelimit-remaining-requests": "abc", "x-ratelimit-limit-tokens": "1.5"},
            LimitReading(),
            LimitReading(),
        ),
        ({"x-ratelimit-remaining-requests": "-1"}, LimitReading(), LimitReading()),
        (
            {"x-ratelimit-reset-requests": "soon", "x-ratelimit-remaining-requests": "0"},
            LimitReading(remaining=0),
            LimitReading(),
        ),
    ],
)
def test_openai_malformed(
    headers: dict[str, str], requests: LimitReading, tokens: LimitReading
) -> None:
    info = parse_openai_headers(headers, NOW)
    assert (info.requests, info.tokens) == (requests, tokens)


@pytest.mark.parametrize(
    ("value", "expected"), [("-1", None), ("0", None), ("120", 120), ("junk", None)]
)
def test_azure_minus_one_and_zero_are_unknown(value: str, expected: int | None) -> None:
    info = parse_openai_headers(
        {"x-ratelimit-remaining-requests": value, "x-ratelimit-remaining-tokens": value},
        NOW,
        azure=True,
    )
    assert info.requests.remaining == expected and info.tokens.remaining == expected


def test_zero_is_meaningful_for_openai_but_not_azure() -> None:
    assert (
        parse_openai_headers({"x-ratelimit-remaining-requests": "0"}, NOW).requests.remaining == 0
    )
    assert (
        parse_openai_headers(
            {"x-ratelimit-remaining-requests": "0"}, NOW, azure=True
        ).requests.remaining
        is None
    )


def test_anthropic_headers() -> None:
    info = parse_anthropic_headers(
        {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "49",
            "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:21Z",
            "anthropic-ratelimit-tokens-limit": "40000",
            "anthropic-ratelimit-tokens-remaining": "39000",
            "anthropic-ratelimit-tokens-reset": "2023-11-14T22:13:26Z",
            "retry-after": "7",
        },
        NOW,
    )
    assert info.requests == LimitReading(50, 49, pytest.approx(1.0))
    assert info.tokens == LimitReading(40000, 39000, pytest.approx(6.0))
    assert info.retry_after_s == 7.0


def test_anthropic_input_tokens_when_no_combined_tokens() -> None:
    info = parse_anthropic_headers(
        {
            "anthropic-ratelimit-input-tokens-limit": "20000",
            "anthropic-ratelimit-input-tokens-remaining": "100",
            "anthropic-ratelimit-input-tokens-reset": "2023-11-14T22:13:30Z",
        },
        NOW,
    )
    assert info.tokens == LimitReading(20000, 100, pytest.approx(10.0))


def test_anthropic_malformed() -> None:
    info = parse_anthropic_headers(
        {
            "anthropic-ratelimit-requests-limit": "fifty",
            "anthropic-ratelimit-requests-reset": "in a minute",
            "retry-after": "later",
        },
        NOW,
    )
    assert info.requests == LimitReading() and info.retry_after_s is None


def gemini_429(
    delay: object, quota_id: str = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
) -> dict:
    return {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "quota",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaId": quota_id}],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
            ],
        }
    }


@pytest.mark.parametrize(
    ("delay", "expected"),
    [
        ("34s", 34.0),
        ("1.5s", 1.5),
        ("0s", 0.0),
        ({"seconds": 3, "nanos": 500_000_000}, 3.5),
        ("34", None),
        ("abc", None),
        ("-3s", None),
        ("12ms", None),
        (None, None),
        ([], None),
    ],
)
def test_gemini_retry_delay(delay: object, expected: float | None) -> None:
    info = parse_gemini({}, gemini_429(delay), NOW)
    assert info.retry_after_s == (pytest.approx(expected) if expected is not None else None)
    assert not info.quota_exhausted


def test_gemini_daily_quota_and_header_fallback() -> None:
    assert parse_gemini(
        {}, gemini_429("20s", "GenerateRequestsPerDayPerProjectPerModel-FreeTier"), NOW
    ).quota_exhausted
    assert parse_gemini({"retry-after": "4"}, {"error": "not a dict"}, NOW).retry_after_s == 4.0
    assert parse_gemini({}, None, NOW).retry_after_s is None
    assert parse_gemini({}, {"error": {"details": "nope"}}, NOW).retry_after_s is None
