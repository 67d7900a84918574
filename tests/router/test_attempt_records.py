"""What one request leaves behind, asserted whole: its attempts, its response, the providers'
metrics and the stats file. The fault server moves the injected clock while it answers, so every
latency is an exact figure rather than zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.clock import ManualClock
from router.fault.server import FaultServer, RecordedRequest
from router.models import Attempt, Usage
from router.stats import StatsStore

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request

PRICES = {"input_per_mtok": 2.123456789, "output_per_mtok": 8.987654321}  # costs of many digits


def cost_of(usage: Usage) -> float:
    return (
        usage.input_tokens * PRICES["input_per_mtok"]
        + usage.output_tokens * PRICES["output_per_mtok"]
    ) / 1e6


def chat_takes(fault_server: FaultServer, clock: ManualClock, seconds: float) -> None:
    """Each chat request the server receives takes ``seconds`` of injected time."""

    def advance(record: RecordedRequest) -> None:
        if record.route == "chat":
            clock.advance(seconds)

    fault_server.on_request = advance


async def test_a_failure_then_an_answer_are_recorded_whole(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    tmp_path: Path,
) -> None:
    fault_server.set_script({"providers": {"first": {"fault": {"status": 503}}}})
    chat_takes(fault_server, clock, 0.25)
    stats = tmp_path / "stats.sqlite3"
    router = make_router(
        make_config(
            [
                provider_entry(
                    fault_server, "first", weight=1000.0, prices={"first-model": PRICES}
                ),
                provider_entry(fault_server, "second", prices={"second-model": PRICES}),
            ]
        ),
        stats_path=stats,
    )
    response = await router.complete(request())

    cost = cost_of(response.usage)
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert response.attempts == [
        Attempt(
            provider="first",
            model="first-model",
            tier=1,
            outcome="failed",
            error_class="server",
            status=503,
            latency_s=0.25,
            detail=response.attempts[0].detail,
        ),
        Attempt(
            provider="second",
            model="second-model",
            tier=1,
            outcome="ok",
            status=200,
            latency_s=0.25,
            cost_usd=cost,
        ),
    ]
    assert "503" in response.attempts[0].detail
    assert (response.provider, response.model, response.tier) == ("second", "second-model", 1)
    assert response.parsed == Verdict(verdict="remote:verify", score=0.9)
    assert response.latency_s == 0.5  # both calls, from the request's start
    assert response.cost_usd == round(cost, 9) != cost  # rounded to the nano-dollar
    assert (response.degraded, response.fallback, response.truncated) == (False, False, False)

    snaps = {s.name: s for s in router.snapshot()}
    assert (snaps["first"].requests_total, snaps["first"].failures_total) == (1, 1)
    assert snaps["first"].recent_latencies_s == [0.25]
    assert (snaps["first"].last_error, snaps["first"].last_error_status) == ("server", 503)
    assert (snaps["second"].requests_total, snaps["second"].successes_total) == (1, 1)
    assert snaps["second"].recent_latencies_s == [0.25]
    assert snaps["second"].throttle_reject_p == 0.0  # settled as accepted
    assert router._by_name["second"].throttle.counts() == (1, 1)
    assert snaps["second"].cost_usd_total == round(cost, 6)
    assert snaps["first"].cost_usd_total == 0.0

    await router.flush_stats()
    store = StatsStore(stats)
    try:
        stored = store.load()
    finally:
        store.close()
    first, second = stored["first"], stored["second"]
    assert (first.totals.requests, first.totals.failures, first.totals.cost_usd) == (1, 1, 0.0)
    assert first.recent == [(False, 0.25)]
    assert (second.totals.requests, second.totals.successes) == (1, 1)
    assert (second.totals.input_tokens, second.totals.output_tokens) == (
        response.usage.input_tokens,
        response.usage.output_tokens,
    )
    assert second.totals.cost_usd == pytest.approx(cost)
    assert second.recent == [(True, 0.25)]


async def test_an_invalid_answer_costs_what_it_generated(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    tmp_path: Path,
) -> None:
    fault_server.responder = lambda task, inputs, raw: (
        {"wrong": "shape"} if raw.get("model") == "weak-model" else {"verdict": "v", "score": 0.9}
    )
    fault_server.set_script({"providers": {"weak": {"limits": {"rpm": 3}}}})
    chat_takes(fault_server, clock, 0.5)
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "weak", weight=1000.0, prices={"weak-model": PRICES}),
                provider_entry(fault_server, "good", prices={"good-model": PRICES}),
            ]
        ),
        stats_path=tmp_path / "stats.sqlite3",
    )
    response = await router.complete(request())
    failed, ok = response.attempts
    assert (failed.provider, failed.outcome, failed.error_class) == (
        "weak",
        "failed",
        "invalid_output",
    )
    assert failed.status == 200 and failed.latency_s == 0.5
    assert failed.cost_usd > 0  # the invalid answer's tokens were generated and paid for
    assert (ok.provider, ok.outcome, ok.cost_usd) == ("good", "ok", cost_of(response.usage))
    assert response.cost_usd == round(failed.cost_usd + ok.cost_usd, 9)
    weak = {s.name: s for s in router.snapshot()}["weak"]
    assert weak.cost_usd_total == round(failed.cost_usd, 6)
    assert (weak.failures_total, weak.recent_latencies_s) == (1, [0.5])
    assert (weak.rpm_limit, weak.rpm_remaining) == (3, 2)  # its rate-limit headers were read
    await router.flush_stats()
    store = StatsStore(tmp_path / "stats.sqlite3")
    try:
        stored = store.load()["weak"]
    finally:
        store.close()
    assert stored.totals.cost_usd == pytest.approx(failed.cost_usd)
    assert stored.recent == [(False, 0.5)]


async def test_a_provider_that_raises_is_a_failed_attempt_not_an_escape(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    tmp_path: Path,
) -> None:
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "buggy", weight=1000.0),
                provider_entry(fault_server, "sound"),
            ]
        ),
        stats_path=tmp_path / "stats.sqlite3",
    )

    async def broken(spec: object, timeout_s: float) -> object:
        clock.advance(0.5)
        raise KeyError("adapter bug")

    router._by_name["buggy"].provider.chat = broken  # type: ignore[method-assign]
    response = await router.complete(request())
    assert response.provider == "sound"
    assert response.cost_usd == 0.0  # a model with no known price costs nothing
    assert response.attempts[0] == Attempt(
        provider="buggy",
        model="buggy-model",
        tier=1,
        outcome="failed",
        error_class="bad_response",
        latency_s=0.5,
        detail="KeyError in the provider",
    )
    buggy = {s.name: s for s in router.snapshot()}["buggy"]
    assert (buggy.failures_total, buggy.last_error, buggy.recent_latencies_s) == (
        1,
        "bad_response",
        [],  # no status: no latency of an answer to record
    )
    await router.flush_stats()
    store = StatsStore(tmp_path / "stats.sqlite3")
    try:
        assert store.load()["buggy"].recent == [(False, None)]
    finally:
        store.close()
