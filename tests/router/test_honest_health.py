"""Honest health against the loopback fault server, on the injected clock: a breaker closes only
when the failed path works, recovery is fast and cheap, 4xx/invalid answers cost a model its
traffic, cancellation releases what it held, trips reach other processes, cost is counted."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from router.clock import ManualClock
from router.config import ConfigError
from router.fault.server import FaultServer
from router.models import BreakerState, ChatMessage, ChatRequest, ProviderSnapshot
from router.ratelimit_headers import RateLimitInfo
from router.router import SmartModelRouter
from router.stats import BreakerRecord, StatsStore

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request, until


def snap(router: SmartModelRouter, name: str) -> ProviderSnapshot:
    return {s.name: s for s in router.snapshot()}[name]


def asking(n: int) -> ChatRequest:
    """A different request each ``n`` (what it asks differs), same task and schema."""
    return ChatRequest(
        task="verify",
        messages=[ChatMessage(role="user", content=f"Is claim {n} supported?")],
        response_schema=Verdict,
    )


async def trip(router: SmartModelRouter, name: str) -> None:
    for _ in range(100):
        if snap(router, name).state is BreakerState.OPEN:
            return
        await router.complete(request())
    raise AssertionError(f"{name} never opened")


async def test_health_up_chat_failing_never_closes_and_cooldowns_grow(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """The typical outage: /v1/models answers, chat answers 500. Each probe is the health check
    plus one real call under the same lease; the real call fails, so the breaker re-opens with
    the next trip's (grown) ceiling instead of closing and resetting the trip count."""
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}, "health": "ok"}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    states: list[BreakerState] = []
    router.subscribe(lambda s: states.append(s.state) if s.name == "openai" else None)
    await trip(router, "openai")
    ceilings = [snap(router, "openai").cooldown_ceiling_s]
    for _ in range(8):
        clock.advance(snap(router, "openai").cooldown_remaining_s)
        fault_server.clear_requests()
        response = await router.complete(request())
        assert [a.outcome for a in response.attempts][:2] == ["probe_ok", "failed"]
        assert len(fault_server.requests_for("openai", "chat")) == 1  # one real call per probe
        assert snap(router, "openai").state is BreakerState.OPEN
        ceilings.append(snap(router, "openai").cooldown_ceiling_s)
    assert ceilings == pytest.approx([min(600.0, 30.0 * 1.5**n) for n in range(9)], abs=1e-3)
    assert BreakerState.CLOSED not in states[states.index(BreakerState.OPEN) :]

    fault_server.set_script({"providers": {"openai": {"health": "ok"}}})  # chat works again
    clock.advance(snap(router, "openai").cooldown_remaining_s)
    provider = router._by_name["openai"].provider
    check = provider.health

    async def slow_check(timeout_s: float) -> RateLimitInfo:
        clock.advance(0.25)  # the check took a quarter of a second on the injected clock
        return await check(timeout_s)

    provider.health = slow_check  # type: ignore[method-assign]
    back = await router.complete(request())
    assert back.provider == "openai" and [a.outcome for a in back.attempts] == ["probe_ok", "ok"]
    probe = back.attempts[0]
    assert (probe.provider, probe.detail) == ("openai", "health probe")
    assert probe.latency_s == pytest.approx(0.25)
    assert snap(router, "openai").state is BreakerState.CLOSED
    assert snap(router, "openai").consecutive_trips == 0


async def test_after_ten_seconds_of_every_provider_down_the_first_answer_comes_within_2s(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    names = ["p1", "p2", "p3"]
    fault_server.set_script({"providers": {n: {"fault": "down"} for n in names}})
    router = make_router(make_config([provider_entry(fault_server, n) for n in names]))
    served: list[tuple[float, str]] = []
    began = clock.monotonic()
    recovered_at = None
    while True:
        now = clock.monotonic() - began
        if recovered_at is None and now >= 10.0:
            fault_server.set_script({"providers": {}})
            recovered_at = now
        response = await router.complete(request())  # never raises: no client-visible failure
        assert isinstance(response.parsed, Verdict)
        served.append((now, response.provider))
        if response.provider != "builtin":
            break
        assert now < 30, "no real answer 20 s after recovery"
        clock.advance(0.1)
    assert recovered_at is not None
    first_real = served[-1][0]
    assert first_real - recovered_at <= 2.0
    # at most one probe (health check) per provider per second of the outage
    for name in names:
        assert len(fault_server.requests_for(name, "health")) <= first_real + 1
    assert all(p == "builtin" for _, p in served[:-1])


async def test_a_provider_answering_400_to_everything_loses_the_models_traffic(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"azure": {"fault": {"status": 400}}}})
    router = make_router(make_config([provider_entry(fault_server, "azure")]))
    for n in range(5):  # five different requests, each refused
        response = await router.complete(asking(n))
        assert response.provider == "builtin"
        assert response.attempts[0].error_class == "bad_request"
    state = snap(router, "azure")
    assert state.state is BreakerState.CLOSED  # the transport is fine ...
    assert "azure-model" in state.unhealthy_models  # ... the model is not
    assert state.success_rate == 0.0
    later = await router.complete(asking(99))
    assert later.provider == "builtin"
    assert "model azure-model OPEN" in later.attempts[0].detail
    assert len(fault_server.requests_for("azure", "chat")) == 5  # no sixth refused call

    fault_server.set_script({"providers": {}})  # fixed: the model's probe closes it
    clock.advance(snap(router, "azure").cooldown_remaining_s + 2.0)
    assert (await router.complete(asking(100))).provider == "azure"
    assert snap(router, "azure").unhealthy_models == {}


async def test_one_callers_malformed_request_trips_nothing(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 400}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    for _ in range(30):  # the same bad request, again and again
        await router.complete(asking(1))
    state = snap(router, "openai")
    assert state.state is BreakerState.CLOSED and state.unhealthy_models == {}
    assert len(fault_server.requests_for("openai", "chat")) == 30


async def test_answers_that_keep_failing_the_schema_cost_the_model_its_traffic(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = lambda task, inputs, raw: {"wrong": "shape"}
    router = make_router(make_config([provider_entry(fault_server, "weak")]))
    for n in range(4):
        response = await router.complete(asking(n))
        assert response.attempts[0].error_class == "invalid_output"
    assert snap(router, "weak").unhealthy_models == {}  # four different requests: not yet
    await router.complete(asking(4))
    state = snap(router, "weak")
    assert "weak-model" in state.unhealthy_models
    assert state.state is BreakerState.CLOSED  # the provider's transport was never at fault
    assert len(fault_server.requests_for("weak", "chat")) == 5
    await router.complete(asking(5))
    assert len(fault_server.requests_for("weak", "chat")) == 5  # no more traffic for the model


async def test_cancelling_a_call_releases_reservation_ticket_slot_and_lease(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"sequence": [{"status": 500, "count": 5}]}}})
    router = make_router(
        make_config([provider_entry(fault_server, "openai", tpm=100_000, probe="request")])
    )
    await trip(router, "openai")
    clock.advance(snap(router, "openai").cooldown_remaining_s)
    assert snap(router, "openai").state is BreakerState.HALF_OPEN
    fault_server.set_script({"providers": {"openai": {"latency_s": 30}}})
    fault_server.clear_requests()
    runtime = router._by_name["openai"]
    tokens_before = runtime.buckets.headroom()[2]
    requests_before = runtime.throttle.counts()
    task = asyncio.ensure_future(router.complete(request()))
    await until(lambda: runtime.bulkhead.in_flight == 1, "the probe call is in flight")
    assert not runtime.breaker.can_attempt()  # the probe holds the lease
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert runtime.bulkhead.in_flight == 0
    assert runtime.buckets.headroom()[2] == tokens_before  # the reservation was refunded
    assert runtime.throttle.counts() == requests_before  # the ticket was withdrawn
    assert runtime.breaker.can_attempt()  # the lease is free: the next request probes at once
    assert runtime.breaker.state is BreakerState.HALF_OPEN


async def test_a_trip_reaches_another_process_sharing_the_stats_within_a_second(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    shared_stats: dict[str, Any],
) -> None:
    providers = [provider_entry(fault_server, "openai")]
    # the first polls rarely, so only the write at the trip itself can bring it to the second
    first = make_router(make_config(providers, shared_state_poll_s=60), **shared_stats)
    second = make_router(make_config(providers), seed=8, **shared_stats)
    for router in (first, second):  # both in use: their shared-state polls run from now on
        assert (await router.complete(request())).provider == "openai"
    fault_server.set_script({"providers": {"openai": {"fault": "down"}}})
    await trip(first, "openai")
    await first.wait_for_writes()  # the trip is written when it happens, not at the next poll
    assert snap(second, "openai").state is BreakerState.CLOSED
    polls = second.shared_state_syncs
    clock.advance(0.5)  # one poll of the second process
    await until(
        lambda: second.shared_state_syncs > polls, "the second process polled", turns=30_000
    )
    assert snap(second, "openai").state is BreakerState.OPEN
    sent = len(fault_server.requests_for("openai", "chat"))
    response = await second.complete(request())
    assert response.provider == "builtin"
    assert len(fault_server.requests_for("openai", "chat")) == sent  # the second sent nothing


async def test_sync_shared_state_adopts_trips_on_demand(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict, tmp_path: Path
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": "down"}}})
    config = make_config([provider_entry(fault_server, "openai")])
    stats = tmp_path / "s.sqlite3"
    first = make_router(config, stats_path=stats)
    second = make_router(config, stats_path=stats)
    await trip(first, "openai")
    await first.sync_shared_state()
    await second.sync_shared_state()
    assert snap(second, "openai").state is BreakerState.OPEN


def test_a_port_out_of_range_is_refused_at_config_load() -> None:
    for url, words in (
        ("http://127.0.0.1:99999/v1", "not a valid URL"),
        ("http://127.0.0.1:0/v1", "port 0"),
        ("http://127.0.0.1:abc/v1", "not a valid URL"),
    ):
        with pytest.raises(ConfigError) as caught:
            make_config([{"name": "x", "kind": "openai", "model": "m", "base_url": url}])
        message = str(caught.value)
        assert "\n" not in message and words in message
        assert message.startswith("test: router.providers[0].base_url:")


async def test_a_refused_connection_is_a_connection_failure(
    make_router: RouterFactory, keys: dict
) -> None:
    router = make_router(
        make_config(
            [{"name": "gone", "kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}]
        )
    )
    response = await router.complete(request())
    assert response.provider == "builtin"
    assert response.attempts[0].error_class == "connection"
    checks = await router.check_health()
    assert [(c.ok, c.error_class) for c in checks] == [(False, "connection")]


async def test_a_health_check_that_raises_anything_is_one_failed_row(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = make_router(make_config([provider_entry(fault_server, "openai")]))

    async def broken(timeout_s: float) -> object:
        raise ExceptionGroup("connect", [OSError("boom")])

    router._by_name["openai"].provider.health = broken  # type: ignore[method-assign]
    [check] = await router.check_health()
    assert not check.ok and check.error_class == "connection"
    assert "ExceptionGroup" in check.detail and "\n" not in check.detail


async def test_a_deadline_cut_call_is_not_held_against_the_provider(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"kind": "timeout", "hang_s": 5}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai", timeout_s=5.0)]))
    for _ in range(6):  # the caller's 0.1 s deadline runs out before the provider's 5 s
        response = await router.complete(request(timeout_s=0.1))
        assert response.attempts[0].error_class == "timeout"
    assert snap(router, "openai").state is BreakerState.CLOSED
    assert snap(router, "openai").success_rate == 1.0


async def test_cost_per_call_in_the_response_snapshot_stats_and_totals(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict, tmp_path: Path
) -> None:
    prices = {"openai-model": {"input_per_mtok": 2.0, "output_per_mtok": 8.0}}
    stats = tmp_path / "stats.sqlite3"
    router = make_router(
        make_config([provider_entry(fault_server, "openai", prices=prices)]), stats_path=stats
    )
    responses = [await router.complete(request()) for _ in range(3)]
    for r in responses:
        expected = (r.usage.input_tokens * 2.0 + r.usage.output_tokens * 8.0) / 1e6
        assert r.usage.input_tokens > 0 and r.cost_usd == pytest.approx(expected)
    spent = sum(r.cost_usd for r in responses)
    assert snap(router, "openai").cost_usd_total == pytest.approx(spent)
    assert router.totals().cost_usd == pytest.approx(spent)
    assert router.totals().remote == 3 and router.totals().fallback == 0
    await router.flush_stats()
    store = StatsStore(stats)
    try:
        assert store.load()["openai"].totals.cost_usd == pytest.approx(spent)
    finally:
        store.close()


def test_shipped_default_models_have_prices() -> None:
    from router.config import router_config_from_env

    env = {
        "OPENAI_API_KEY": "x",
        "ANTHROPIC_API_KEY": "x",
        "GEMINI_API_KEY": "x",
        "GITHUB_TOKEN": "x",
    }
    for provider in router_config_from_env(env).providers:
        for model in provider.models.values():
            price = provider.price_of(model)
            assert price is not None and price.output_per_mtok > price.input_per_mtok > 0


async def test_fallback_answers_are_counted_and_marked(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"big": {"fault": {"status": 500}}}})
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "big", models={2: "big-2"}),
                provider_entry(fault_server, "small", models={1: "small-1"}),
            ]
        )
    )
    lower = await router.complete(request(tier=2))
    assert (lower.provider, lower.degraded, lower.fallback) == ("small", True, False)
    fault_server.set_script({"providers": {"big": {"fault": "down"}, "small": {"fault": "down"}}})
    kinds = Counter()
    for _ in range(4):
        response = await router.complete(request(tier=2))
        kinds[(response.provider, response.degraded, response.fallback)] += 1
    assert kinds[("builtin", True, True)] >= 1
    totals = router.totals()
    assert totals.calls == 5 and totals.lower_tier + totals.fallback + totals.remote == 5
    assert totals.fallback == kinds[("builtin", True, True)]
    assert {s.name: s for s in router.snapshot()}["builtin"].fallback_total == totals.fallback


async def test_a_provider_the_throttle_rejects_is_passed_over_locally(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "flaky", weight=1000.0),  # first in line, always
                provider_entry(fault_server, "spare"),
            ]
        )
    )
    throttle = router._by_name["flaky"].throttle
    for _ in range(200):  # two minutes of calls the provider refused: p = 200/201
        throttle.settle(throttle.begin(), accepted=False)
    responses = [await router.complete(asking(n)) for n in range(20)]
    skipped = [
        r for r in responses if any(a.detail.startswith("throttled locally") for a in r.attempts)
    ]
    assert len(skipped) >= 18  # ~99.5 % rejected locally ...
    assert len(fault_server.requests_for("flaky", "chat")) <= 2  # ... and never sent
    assert all(r.provider == "spare" for r in skipped)


async def test_rate_limit_headers_of_a_429_reach_the_buckets(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    limited = {
        "status": 429,
        "retry_after_s": 1,
        "headers": {
            "x-ratelimit-limit-requests": "100",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "20s",
        },
    }
    fault_server.set_script({"providers": {"openai": {"sequence": [limited]}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    await router.complete(request())
    state = snap(router, "openai")
    assert (state.rpm_limit, state.rpm_remaining) == (100, 0)
    clock.advance(1.0)  # the break is over, but the bucket is empty until the reset
    response = await router.complete(request())
    assert response.provider == "builtin"
    assert "rate-limit bucket has room in" in response.attempts[0].detail
    assert len(fault_server.requests_for("openai", "chat")) == 1
    clock.advance(19.0)
    assert (await router.complete(request())).provider == "openai"


async def test_providers_check_reports_health_misconfiguration_and_latency(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict, monkeypatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    fault_server.set_script(
        {
            "providers": {
                "sick": {"fault": {"status": 503}},
                "denied": {"health": {"status": 401}},
                "local": {"health": {"status": 404}},
            }
        }
    )
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "fine"),
                provider_entry(fault_server, "sick"),
                provider_entry(fault_server, "nokey", kind="gemini"),
                provider_entry(fault_server, "denied"),
                provider_entry(fault_server, "local", kind="ollama", api_key_env=None),
            ]
        )
    )
    began = time.perf_counter()
    fine, sick, nokey, denied, local = await router.check_health()
    took = time.perf_counter() - began
    checks = (fine, sick, nokey, denied, local)
    assert [(c.name, c.kind) for c in checks] == [
        ("fine", "openai"),
        ("sick", "openai"),
        ("nokey", "gemini"),
        ("denied", "openai"),
        ("local", "ollama"),
    ]
    for answered in (fine, sick, denied, local):  # each measured within the check's own time
        assert answered.latency_s is not None and 0 < answered.latency_s <= took
    assert (denied.ok, denied.error_class) == (False, "permanent")
    assert denied.detail.startswith("misconfigured: HTTP 401")
    assert denied.detail.endswith(
        ": check the key in $OPENAI_API_KEY, the model names and base_url"
    )
    assert local.detail.startswith("misconfigured: HTTP 404")
    assert local.detail.endswith(": check the model names and base_url")  # it has no key
    assert (fine.name, fine.kind, fine.ok, fine.detail, fine.error_class) == (
        "fine",
        "openai",
        True,
        "healthy",
        None,
    )
    assert fine.latency_s is not None and fine.latency_s > 0
    assert (sick.ok, sick.error_class) == (False, "server") and sick.detail.startswith("HTTP 503")
    assert (nokey.ok, nokey.latency_s, nokey.error_class) == (False, None, "permanent")
    assert nokey.detail == "misconfigured: environment variable GEMINI_API_KEY is not set"
    assert fault_server.requests_for("nokey", "health") == []


async def test_an_unreadable_stats_file_is_logged_once_and_routing_goes_on(
    make_router: RouterFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    router = make_router(make_config([]), stats_path=tmp_path / "s.sqlite3")
    router._stats.close()  # type: ignore[union-attr]
    for _ in range(3):
        await router.sync_shared_state()
    read = [r.getMessage() for r in caplog.records if "could not be read" in r.getMessage()]
    assert read == ["provider stats could not be read (ProgrammingError)"]
    assert (await router.complete(request())).provider == "builtin"


async def test_only_open_rows_of_other_processes_are_adopted(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, tmp_path: Path
) -> None:
    stats = tmp_path / "s.sqlite3"
    store = StatsStore(stats)
    later = clock.wall() + 5
    before = clock.wall() - 10
    rows = [
        BreakerRecord("a", "CLOSED", 30.0, 1, None, None, None, False, None, later, later),
        BreakerRecord("b", "HALF_OPEN", 30.0, 1, None, None, None, False, None, later, later),
        # written 10 s ago with 30 s to go: 20 s are left
        BreakerRecord("c", "OPEN", 30.0, 2, "tripped", None, None, False, None, before, before),
    ]
    store.write([], rows)
    store.close()
    names = ["a", "b", "c"]
    router = make_router(
        make_config([provider_entry(fault_server, n) for n in names]), stats_path=stats
    )
    for name in names:  # what the router read at start-up, replaced by live state
        router._by_name[name].breaker.restore(BreakerState.CLOSED, 0.0, 0, None, None)
    await router.sync_shared_state()
    await router.sync_shared_state()  # adopting again changes nothing
    assert router.shared_state_syncs == 2
    states = {n: snap(router, n).state for n in names}
    assert states == {"a": BreakerState.CLOSED, "b": BreakerState.CLOSED, "c": BreakerState.OPEN}
    adopted = router._by_name["c"].breaker.view()
    assert adopted.cooldown_remaining_s == pytest.approx(20.0)
    assert (adopted.consecutive_trips, adopted.open_reason) == (2, "tripped")


async def test_a_failed_health_check_reopens_with_what_it_answered(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"p": {"sequence": [{"status": 500, "count": 5}]}}})
    router = make_router(make_config([provider_entry(fault_server, "p")]))
    await trip(router, "p")

    async def probe_with(health: dict) -> object:
        fault_server.set_script({"providers": {"p": {"health": health}}})
        clock.advance(router._by_name["p"].breaker.cooldown_remaining())
        response = await router.complete(request())
        assert response.provider == "builtin"
        return response.attempts[0]

    limited = await probe_with({"status": 429, "retry_after_s": 7})
    assert (limited.outcome, limited.error_class, limited.status) == (
        "probe_failed",
        "rate_limit",
        429,
    )
    state = snap(router, "p")
    assert state.state is BreakerState.OPEN and state.cooldown_remaining_s == pytest.approx(7.0)
    assert (state.last_error, state.last_error_status) == ("rate_limit", 429)
    assert state.last_error_retry_after_s == 7.0

    refused = await probe_with({"status": 400})  # not this request's fault: the endpoint's
    assert refused.error_class == "bad_request"
    assert snap(router, "p").state is BreakerState.OPEN
    assert snap(router, "p").cooldown_ceiling_s == pytest.approx(30.0 * 1.5**2)  # as a failure

    denied = await probe_with({"status": 401})
    assert denied.error_class == "permanent"
    state = snap(router, "p")
    assert state.misconfigured and "check the key in $OPENAI_API_KEY" in (
        state.misconfigured_reason or ""
    )
    assert state.cooldown_remaining_s == pytest.approx(600.0)

    async def broken(timeout_s: float) -> object:
        clock.advance(0.25)  # the check took a quarter of a second on the injected clock
        raise RuntimeError("adapter bug")

    router._by_name["p"].provider.health = broken  # type: ignore[method-assign]
    crashed = await probe_with({"kind": "ok"})
    assert (crashed.error_class, crashed.detail) == (
        "bad_response",
        "health probe: RuntimeError in the health probe",
    )
    assert crashed.latency_s == pytest.approx(0.25)


async def test_cancelling_a_model_probe_frees_the_models_lease(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"azure": {"fault": {"status": 400}}}})
    router = make_router(make_config([provider_entry(fault_server, "azure")]))
    for n in range(5):
        await router.complete(asking(n))
    model = router._by_name["azure"].models.breaker("azure-model")
    clock.advance(model.cooldown_remaining())
    fault_server.set_script({"providers": {"azure": {"latency_s": 30}}})
    task = asyncio.ensure_future(router.complete(asking(50)))
    await until(lambda: router._by_name["azure"].bulkhead.in_flight == 1, "the model probe")
    assert not model.can_attempt()
    passed_over = await router.complete(asking(51))  # meanwhile: the model's probe is out
    assert passed_over.provider == "builtin"
    assert passed_over.attempts[0].detail == "model azure-model HALF_OPEN with its probe in flight"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert model.can_attempt() and model.state is BreakerState.HALF_OPEN


async def test_a_subscriber_sees_a_missing_key_in_the_snapshots_it_is_sent(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A break stored by an earlier run ends in this one; the key has gone meanwhile. The
    snapshot published for the transition says so, like ``snapshot()`` does."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    stats = tmp_path / "s.sqlite3"
    store = StatsStore(stats)
    now = clock.wall()
    store.write(
        [], [BreakerRecord("g", "OPEN", 5.0, 1, "server", None, None, False, None, now, now)]
    )
    store.close()
    router = make_router(
        make_config([provider_entry(fault_server, "g", kind="gemini")]), stats_path=stats
    )
    seen: list[ProviderSnapshot] = []
    router.subscribe(seen.append)
    assert (await router.complete(request())).provider == "builtin"  # binds the wake-up timer
    clock.advance(5.0)
    await until(
        lambda: any(s.name == "g" and s.state is BreakerState.HALF_OPEN for s in seen),
        "the stored break ends and its transition is published",
    )
    published = [s for s in seen if s.name == "g"][-1]
    assert published.misconfigured
    assert published.misconfigured_reason == "environment variable GEMINI_API_KEY is not set"


async def test_a_failed_health_probe_is_stored_and_answered_by_the_builtin(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    tmp_path: Path,
) -> None:
    fault_server.set_script({"providers": {"p": {"sequence": [{"status": 500, "count": 5}]}}})
    stats = tmp_path / "s.sqlite3"
    router = make_router(make_config([provider_entry(fault_server, "p")]), stats_path=stats)
    await trip(router, "p")
    fault_server.set_script({"providers": {"p": {"health": {"status": 503}}}})
    clock.advance(router._by_name["p"].breaker.cooldown_remaining())
    response = await router.complete(request())  # never raises
    assert response.provider == "builtin" and response.attempts[0].outcome == "probe_failed"
    await router.flush_stats()
    store = StatsStore(stats)
    row = store.load()["p"].breaker
    store.close()
    assert row is not None
    assert (row.state, row.last_error, row.last_error_status) == ("OPEN", "server", 503)


async def test_a_snapshot_carries_the_breakers_own_reason_for_opening(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """The reason is the breaker's (the trip's error class, or the failure count that tripped
    it), published with every snapshot while OPEN, and gone once the breaker closes."""
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}, "health": "ok"}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    published: list[ProviderSnapshot] = []
    router.subscribe(lambda s: published.append(s) if s.name == "openai" else None)
    assert snap(router, "openai").open_reason is None
    await trip(router, "openai")
    opened = snap(router, "openai")
    assert opened.open_reason == "5 consecutive failures"
    assert (opened.last_error, opened.last_error_status) == ("server", 500)
    first_open = next(s for s in published if s.state is BreakerState.OPEN)
    assert first_open.open_reason == "5 consecutive failures"

    fault_server.set_script({"providers": {"openai": {"fault": "rate_limit", "health": "ok"}}})
    clock.advance(snap(router, "openai").cooldown_remaining_s)
    await router.complete(request())
    assert snap(router, "openai").open_reason == "probe failed: rate_limit"

    fault_server.set_script({"providers": {"openai": {"health": "ok"}}})
    clock.advance(snap(router, "openai").cooldown_remaining_s)
    await router.complete(request())
    closed = snap(router, "openai")
    assert closed.state is BreakerState.CLOSED and closed.open_reason is None


async def test_a_probe_lease_covers_the_health_check_the_call_and_its_own_margin(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """A probing request holds the lease for its health check's timeout (5 s: the provider's
    timeout is below probe_timeout_s) plus its call's (5 s) plus probe_lease_s (15 s): however
    slow the probe, no second one joins it before then, and a lost one frees the provider after."""
    fault_server.set_script({"providers": {"p": {"sequence": [{"status": 500, "count": 5}]}}})
    router = make_router(make_config([provider_entry(fault_server, "p")], probe_lease_s=15))
    await trip(router, "p")
    runtime = router._by_name["p"]
    clock.advance(runtime.breaker.cooldown_remaining())
    go_on = asyncio.Event()
    check = runtime.provider.health

    async def stalled_check(timeout_s: float) -> RateLimitInfo:
        await go_on.wait()  # the health check hangs until the test lets it go on
        return await check(timeout_s)

    runtime.provider.health = stalled_check  # type: ignore[method-assign]
    probe = asyncio.ensure_future(router.complete(request()))
    await until(lambda: not runtime.breaker.can_attempt(), "the probe takes the lease")
    clock.advance(5 + 5 + 15 - 0.01)
    assert not runtime.breaker.can_attempt()
    clock.advance(0.01)
    assert runtime.breaker.can_attempt()  # the lease has expired at exactly its end
    go_on.set()
    await probe


async def test_a_model_probe_lease_covers_its_call_not_a_health_check(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """A model's probe is one real call (no health check: the provider is healthy), so its lease
    lasts the call's timeout (5 s) plus probe_lease_s (15 s)."""
    fault_server.set_script({"providers": {"azure": {"fault": {"status": 400}}}})
    router = make_router(make_config([provider_entry(fault_server, "azure")], probe_lease_s=15))
    for n in range(5):
        await router.complete(asking(n))
    runtime = router._by_name["azure"]
    assert runtime.provider.has_health_probe
    model = runtime.models.breaker("azure-model")
    clock.advance(model.cooldown_remaining())
    fault_server.set_script({"providers": {}})
    go_on = asyncio.Event()
    chat = runtime.provider.chat

    async def stalled_chat(spec: Any, timeout_s: float) -> Any:
        await go_on.wait()  # the call hangs until the test lets it go on
        return await chat(spec, timeout_s)

    runtime.provider.chat = stalled_chat  # type: ignore[method-assign]
    probe = asyncio.ensure_future(router.complete(asking(50)))
    await until(lambda: not model.can_attempt(), "the model probe takes the lease")
    clock.advance(5 + 15 - 0.01)
    assert not model.can_attempt()
    clock.advance(0.01)
    assert model.can_attempt()
    go_on.set()
    await probe
