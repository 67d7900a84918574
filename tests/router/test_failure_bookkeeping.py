"""How a failed call is settled, seen from outside: what the provider's snapshot and the stats
file say afterwards, what is given back, what is logged. Real loopback calls, injected clock."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from router.clock import ManualClock
from router.fault.server import FaultServer
from router.models import BreakerState, ChatMessage, ChatRequest, ProviderSnapshot
from router.router import SmartModelRouter
from router.stats import StatsStore

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request


def snap(router: SmartModelRouter, name: str) -> ProviderSnapshot:
    return {s.name: s for s in router.snapshot()}[name]


async def test_a_rate_limited_call_is_recorded_with_its_retry_after_and_stored(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict, tmp_path: Path
) -> None:
    fault_server.set_script(
        {"providers": {"openai": {"sequence": [{"status": 429, "retry_after_s": 2}]}}}
    )
    stats = tmp_path / "stats.sqlite3"
    router = make_router(make_config([provider_entry(fault_server, "openai")]), stats_path=stats)
    await router.complete(request())
    state = snap(router, "openai")
    assert (state.last_error, state.last_error_status, state.last_error_retry_after_s) == (
        "rate_limit",
        429,
        2.0,
    )
    await router.flush_stats()
    store = StatsStore(stats)
    try:
        stored = store.load()["openai"]
    finally:
        store.close()
    assert (stored.totals.requests, stored.totals.failures, stored.totals.rate_limited) == (1, 1, 1)
    assert stored.breaker is not None
    assert (stored.breaker.state, stored.breaker.last_error) == ("OPEN", "rate_limit")


async def test_a_failure_that_trips_nothing_is_still_stored_on_the_breakers_row(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict, tmp_path: Path
) -> None:
    fault_server.set_script({"providers": {"openai": {"sequence": [{"status": 503}]}}})
    stats = tmp_path / "stats.sqlite3"
    router = make_router(
        make_config([provider_entry(fault_server, "openai", tpm=100_000)]), stats_path=stats
    )
    await router.complete(request())
    state = snap(router, "openai")
    assert state.state is BreakerState.CLOSED
    assert state.tpm_remaining == 100_000  # the failed call's token reservation was refunded
    await router.flush_stats()
    store = StatsStore(stats)
    try:
        breaker = store.load()["openai"].breaker
    finally:
        store.close()
    assert breaker is not None
    assert (breaker.state, breaker.last_error, breaker.last_error_status) == (
        "CLOSED",
        "server",
        503,
    )


async def test_a_500_within_a_short_deadline_still_counts_against_the_provider(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    """Only a timeout can be the caller's deadline's doing; a 500 is the provider's."""
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    await router.complete(request(timeout_s=0.5))  # the call's timeout is cut to the deadline
    state = snap(router, "openai")
    assert (state.failures_total, state.success_rate, state.throttle_reject_p) == (1, 0.0, 0.5)


async def test_a_misconfigured_provider_is_logged_once_per_refusal_with_what_to_do(
    fault_server: FaultServer,
    make_router: RouterFactory,
    keys: dict,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 401}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    with caplog.at_level(logging.WARNING, logger="router.router"):
        await router.complete(request())
    warnings = [r.getMessage() for r in caplog.records if r.name == "router.router"]
    detail = router._by_name["openai"].misconfigured_reason.split(": check ")[0]
    assert warnings == [
        f"provider openai is misconfigured ({detail}): it is skipped until a health probe passes"
    ]
    state = snap(router, "openai")
    assert state.state is BreakerState.OPEN
    assert state.open_reason == f"misconfigured ({detail})"
    assert state.cooldown_remaining_s == 600.0  # a misconfiguration's break, no early probe


async def test_a_probe_answered_with_a_bad_request_frees_the_lease_for_the_next_probe(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """A 400 to the probing request says nothing about the path that failed: the breaker stays
    HALF_OPEN and the next request probes at once."""
    fault_server.set_script({"providers": {"openai": {"sequence": [{"status": 500, "count": 5}]}}})
    router = make_router(make_config([provider_entry(fault_server, "openai", probe="request")]))
    breaker = router._by_name["openai"].breaker
    for _ in range(100):
        if breaker.state is BreakerState.OPEN:
            break
        await router.complete(request())
    clock.advance(breaker.cooldown_remaining())
    fault_server.set_script({"providers": {"openai": {"sequence": [{"status": 400}]}}})
    refused = await router.complete(request())
    assert refused.attempts[0].error_class == "bad_request"
    assert breaker.state is BreakerState.HALF_OPEN and breaker.can_attempt()
    answered = await router.complete(request())
    assert answered.provider == "openai"
    assert breaker.state is BreakerState.CLOSED


async def test_a_probe_answered_401_reopens_the_provider_as_misconfigured(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"sequence": [{"status": 500, "count": 5}]}}})
    router = make_router(make_config([provider_entry(fault_server, "openai", probe="request")]))
    breaker = router._by_name["openai"].breaker
    for _ in range(100):
        if breaker.state is BreakerState.OPEN:
            break
        await router.complete(request())
    clock.advance(breaker.cooldown_remaining())
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 401}}}})
    probe = await router.complete(request())
    assert [(a.outcome, a.error_class) for a in probe.attempts][:1] == [("failed", "permanent")]
    state = snap(router, "openai")
    assert state.state is BreakerState.OPEN and state.misconfigured
    assert state.cooldown_remaining_s == pytest.approx(600.0)
    assert state.open_reason == "probe failed: permanent"


async def test_a_models_reason_names_what_its_last_refusal_said(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"azure": {"fault": {"status": 400}}}})
    router = make_router(make_config([provider_entry(fault_server, "azure")]))
    for n in range(5):  # five different requests refused
        asking = ChatRequest(
            task="verify",
            messages=[ChatMessage(role="user", content=f"Is claim {n} supported?")],
            response_schema=Verdict,
        )
        last = await router.complete(asking)
    detail = last.attempts[0].detail
    assert snap(router, "azure").unhealthy_models == {
        "azure-model": f"OPEN: 5 different requests failed: {detail}"
    }


async def test_a_provider_that_answered_then_tripped_is_passed_over_as_open(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """An answer leaves nothing behind that would later read as a misconfiguration."""
    fault_server.set_script(
        {"providers": {"openai": {"sequence": ["ok", {"status": 500, "count": 5}]}}}
    )
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    assert (await router.complete(request())).provider == "openai"
    breaker = router._by_name["openai"].breaker
    for _ in range(100):
        if breaker.state is BreakerState.OPEN:
            break
        await router.complete(request())
    passed_over = await router.complete(request())
    assert passed_over.attempts[0].detail.startswith("OPEN, next probe in ")
    assert not snap(router, "openai").misconfigured
    # recovered (a probe closes the breaker), then tripped again: still plainly OPEN
    fault_server.set_script({"providers": {}})
    clock.advance(breaker.cooldown_remaining())
    assert (await router.complete(request())).provider == "openai"
    assert breaker.state is BreakerState.CLOSED
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}}}})
    for _ in range(100):
        if breaker.state is BreakerState.OPEN:
            break
        await router.complete(request())
    again = await router.complete(request())
    assert again.attempts[0].detail.startswith("OPEN, next probe in ")


async def test_every_breaker_transition_is_logged_with_its_reason(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fault_server.set_script(
        {"providers": {"openai": {"sequence": [{"status": 429, "retry_after_s": 2}]}}}
    )
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    with caplog.at_level(logging.INFO, logger="router.router"):
        await router.complete(request())
    reason = snap(router, "openai").open_reason
    assert [r.getMessage() for r in caplog.records if r.name == "router.router"] == [
        f"provider openai: CLOSED -> OPEN ({reason}; next probe in 2.0s (cooldown ceiling 2.0s))"
    ]


@pytest.mark.parametrize("probing", [False, True])
async def test_a_refusal_as_misconfigured_honours_a_retry_after_beyond_its_break(
    probing: bool,
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
) -> None:
    """A 401 saying Retry-After 900 s keeps the provider out for 900 s, not the usual 600 —
    whether it answered a probe or a request to a healthy provider."""
    router = make_router(make_config([provider_entry(fault_server, "openai", probe="request")]))
    breaker = router._by_name["openai"].breaker
    if probing:
        fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}}}})
        for _ in range(100):
            if breaker.state is BreakerState.OPEN:
                break
            await router.complete(request())
        clock.advance(breaker.cooldown_remaining())
    fault_server.set_script(
        {"providers": {"openai": {"fault": {"status": 401, "retry_after_s": 900}}}}
    )
    refused = await router.complete(request())
    assert refused.attempts[0].error_class == "permanent"
    state = snap(router, "openai")
    assert (state.state, state.misconfigured) == (BreakerState.OPEN, True)
    assert state.cooldown_remaining_s == 900.0


async def test_a_models_probe_refused_again_reopens_the_model(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"azure": {"fault": {"status": 400}}}})
    router = make_router(make_config([provider_entry(fault_server, "azure")]))
    for n in range(5):  # five different requests refused: the model is OPEN
        await router.complete(
            ChatRequest(
                task="verify",
                messages=[ChatMessage(role="user", content=f"Is claim {n} supported?")],
                response_schema=Verdict,
            )
        )
    model = router._by_name["azure"].models.breaker("azure-model")
    clock.advance(model.cooldown_remaining())
    probe = await router.complete(request())  # the model's probe, refused like the rest
    assert probe.attempts[0].error_class == "bad_request"
    assert snap(router, "azure").unhealthy_models == {
        "azure-model": "OPEN: probe failed: bad_request"
    }
    assert model.state is BreakerState.OPEN and model.can_attempt() is False
