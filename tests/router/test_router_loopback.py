"""The router against the real fault server over loopback, with an injected clock for every cooldown."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from router.clock import ManualClock
from router.errors import NoHandlerError
from router.fault.server import FaultServer
from router.models import BreakerState, ProviderSnapshot

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request, until


async def trip(router, name: str = "openai", limit: int = 100) -> None:
    """Send requests until ``name`` is OPEN (adaptive throttling holds back part of a failing provider's share)."""
    for _ in range(limit):
        if {s.name: s for s in router.snapshot()}[name].state is BreakerState.OPEN:
            return
        await router.complete(request())
    raise AssertionError(f"{name} never opened")


async def test_429_retry_after_is_honoured_not_a_flat_120s(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script(
        {"providers": {"openai": {"sequence": [{"status": 429, "retry_after_s": 2}]}}}
    )
    router = make_router(make_config([provider_entry(fault_server, "openai")]))

    first = await router.complete(request())
    assert first.provider == "builtin" and first.degraded
    assert [(a.provider, a.error_class) for a in first.attempts][0] == ("openai", "rate_limit")
    snap = {s.name: s for s in router.snapshot()}["openai"]
    assert snap.state is BreakerState.OPEN and snap.cooldown_remaining_s == pytest.approx(2.0)

    clock.advance(1.9)
    assert (await router.complete(request())).provider == "builtin"
    assert len(fault_server.requests_for("openai", "chat")) == 1  # nothing sent while OPEN

    clock.advance(0.2)  # ~2 s of injected time, nowhere near 120 s
    back = await router.complete(request())
    assert back.provider == "openai" and not back.degraded
    assert isinstance(back.parsed, Verdict) and back.parsed.verdict == "remote:verify"
    assert [a.outcome for a in back.attempts] == ["probe_ok", "ok"]
    assert len(fault_server.requests_for("openai", "health")) == 1


async def test_5xx_burst_trips_and_traffic_moves_by_health(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"alpha": {"sequence": [{"status": 503, "count": 5}]}}})
    router = make_router(
        make_config([provider_entry(fault_server, "alpha"), provider_entry(fault_server, "beta")])
    )

    served = Counter()
    for _ in range(200):  # adaptive throttling already holds back most of alpha's share as it fails
        response = await router.complete(request())
        served[response.provider] += 1
        assert response.provider != "builtin"  # beta always answered when alpha failed
        clock.advance(0.1)
        if {s.name: s for s in router.snapshot()}["alpha"].state is BreakerState.OPEN:
            break
    assert {s.name: s for s in router.snapshot()}["alpha"].state is BreakerState.OPEN
    assert len(fault_server.requests_for("alpha", "chat")) == 5  # five consecutive failures trip it
    for _ in range(20):
        served[(await router.complete(request())).provider] += 1
    assert len(fault_server.requests_for("alpha", "chat")) == 5  # and nothing is sent while OPEN
    assert served["alpha"] == 0

    clock.advance(30)
    assert {s.name: s for s in router.snapshot()}["alpha"].state is BreakerState.HALF_OPEN
    after = Counter()
    for _ in range(60):
        after[(await router.complete(request())).provider] += 1
        clock.advance(0.5)
    # alpha recovered but its history (5 failures) still weighs on its health score
    assert after["alpha"] > 0
    assert after["beta"] > after["alpha"]
    snaps = {s.name: s for s in router.snapshot()}
    assert snaps["alpha"].health_score < snaps["beta"].health_score


async def test_all_remote_down_means_builtin_degraded_and_no_exception(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    names = ["openai", "anthropic", "gemini"]
    fault_server.set_script({"providers": {n: {"fault": "down"} for n in names}})
    router = make_router(make_config([provider_entry(fault_server, n, kind=n) for n in names]))
    for _ in range(60):
        response = await router.complete(request())
        assert response.provider == "builtin" and response.degraded
        assert isinstance(response.parsed, Verdict) and response.parsed.verdict == "builtin:verify"
    assert all(s.state is BreakerState.OPEN for s in router.snapshot() if s.name != "builtin")


async def test_builtin_alone_is_not_degraded(make_router: RouterFactory) -> None:
    router = make_router(make_config([]))
    response = await router.complete(request())
    assert response.provider == "builtin" and not response.degraded


async def test_no_handler_raises_a_clear_router_error(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    with pytest.raises(NoHandlerError, match="register one"):
        await router.complete(request(task="unknown_task"))


async def test_bulkhead_limits_hold(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"latency_s": 0.05}}})
    router = make_router(
        make_config([provider_entry(fault_server, "openai", bulkhead=3)], capacity_wait_s=30)
    )
    responses = await asyncio.gather(*(router.complete(request()) for _ in range(20)))
    assert all(r.provider == "openai" for r in responses)  # waited for a slot rather than degrading
    assert fault_server.max_in_flight("openai") == 3
    assert router._runtimes[0].bulkhead.peak == 3


async def test_a_full_bulkhead_is_routed_around(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"slow": {"latency_s": 0.3}}})
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "slow", bulkhead=2),
                provider_entry(fault_server, "spare", bulkhead=20, weight=0.0),
            ]
        )
    )
    responses = await asyncio.gather(*(router.complete(request()) for _ in range(10)))
    counts = Counter(r.provider for r in responses)
    assert counts == {"slow": 2, "spare": 8}
    assert fault_server.max_in_flight("slow") == 2


class SpyTransport(httpx.AsyncBaseTransport):
    """Checks, at the moment each request leaves, that its provider is not OPEN."""

    def __init__(self, base: str) -> None:
        self.inner = httpx.AsyncHTTPTransport(retries=0)
        self.base = base
        self.router = None
        self.violations: list[str] = []
        self.sent: Counter[str] = Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        provider = request.url.path.split("/")[1]
        states = {s.name: s.state for s in self.router.snapshot()}  # type: ignore[union-attr]
        self.sent[provider] += 1
        if states.get(provider) is BreakerState.OPEN:
            self.violations.append(f"{request.method} {request.url.path} while OPEN")
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_no_request_is_ever_sent_to_an_open_provider(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script(
        {
            "providers": {
                "flaky": {
                    "sequence": [
                        {"status": 500, "count": 5},
                        "ok",
                        {"status": 503, "count": 6},
                        "down",
                        "down",
                    ],
                    "then": "ok",
                },
                "limited": {
                    "sequence": [
                        "ok",
                        {"status": 429, "retry_after_s": 3},
                        "ok",
                        {"status": 429, "retry_after_s": 1},
                    ]
                },
                "dead": {"fault": "down"},
            }
        }
    )
    spy = SpyTransport(fault_server.base_url)
    router = make_router(
        make_config([provider_entry(fault_server, n) for n in ("flaky", "limited", "dead")]),
        transport=spy,
    )
    spy.router = router
    for _ in range(150):
        await asyncio.gather(*(router.complete(request()) for _ in range(3)))
        clock.advance(1.0)
    assert spy.violations == []
    # the dead provider is only probed now and then: about a second after it tripped, then less
    # and less often (0.2 x the outage so far) — never once a second for the 150 s
    assert spy.sent["dead"] < 40
    assert sum(spy.sent.values()) > 150


async def test_100_concurrent_requests_against_half_open_send_exactly_one_probe(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script(
        {
            "providers": {
                "openai": {
                    "sequence": [{"status": 429, "retry_after_s": 5}],
                    "health": {"kind": "ok", "delay_s": 0.5},
                }
            }
        }
    )
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    await router.complete(request())
    clock.advance(5)
    assert router.snapshot()[0].state is BreakerState.HALF_OPEN
    fault_server.clear_requests()

    responses = await asyncio.gather(*(router.complete(request()) for _ in range(100)))
    health = fault_server.requests_for("openai", "health")
    chats = fault_server.requests_for("openai", "chat")
    assert len(health) == 1  # exactly one probe reached the provider
    assert len(chats) == 1  # and only the probing request used it; the 99 others fell back at once
    counts = Counter(r.provider for r in responses)
    assert counts == {"builtin": 99, "openai": 1}
    assert all(
        r.attempts[0].detail == "HALF_OPEN with its probe in flight"
        for r in responses
        if r.provider == "builtin"
    )


async def test_probe_by_real_request_when_there_is_no_health_probe(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"sequence": [{"status": 500, "count": 5}]}}})
    router = make_router(make_config([provider_entry(fault_server, "openai", probe="request")]))
    await trip(router)
    clock.advance(30)
    response = await router.complete(request())
    assert response.provider == "openai"
    assert fault_server.requests_for("openai", "health") == []
    assert router.snapshot()[0].state is BreakerState.CLOSED


async def test_failed_probe_reopens_with_grown_cooldown(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 502}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    await trip(router)
    assert router.snapshot()[0].cooldown_ceiling_s == pytest.approx(30)
    clock.advance(router.snapshot()[0].cooldown_remaining_s)
    response = await router.complete(request())
    assert [a.outcome for a in response.attempts][:1] == ["probe_failed"]
    assert router.snapshot()[0].cooldown_ceiling_s == pytest.approx(45)


async def test_tier_fall_through_is_degraded(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"big": {"fault": {"status": 500}}}})
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "big", models={3: "big-3"}),
                provider_entry(fault_server, "small", models={1: "small-1", 2: "small-2"}),
            ]
        )
    )
    response = await router.complete(request(tier=3))
    assert (response.provider, response.model, response.tier, response.degraded) == (
        "small",
        "small-2",
        2,
        True,
    )
    normal = await router.complete(request(tier=2))
    assert not normal.degraded


async def test_profile_goes_first(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    config = make_config(
        [provider_entry(fault_server, "a"), provider_entry(fault_server, "b", weight=0)]
    )
    config = config.model_copy(
        update={
            "profiles": {
                "careful": __import__("router.config").config.ProfileConfig(
                    provider="b", model="b-special", temperature=0.0
                )
            }
        }
    )
    router = make_router(config)
    response = await router.complete(request(profile="careful"))
    assert (response.provider, response.model) == ("b", "b-special")
    assert fault_server.requests_for("b")[0].json["temperature"] == 0.0
    unknown = await router.complete(request(profile="nope"))
    assert unknown.attempts[0].detail.startswith("unknown profile")


async def test_retries_are_bounded_per_request(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    names = [f"p{i}" for i in range(7)]
    fault_server.set_script({"providers": {n: {"fault": {"status": 500}} for n in names}})
    router = make_router(
        make_config([provider_entry(fault_server, n) for n in names], max_attempts=3)
    )
    response = await router.complete(request())
    assert response.provider == "builtin"
    assert sum(1 for a in response.attempts if a.outcome == "failed") == 3
    assert len([r for r in fault_server.requests if r.route == "chat"]) == 3


async def test_misconfigured_provider_is_not_retried(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 401}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    for _ in range(5):
        await router.complete(request())
    assert len(fault_server.requests_for("openai", "chat")) == 1
    snap = router.snapshot()[0]
    assert snap.misconfigured and "HTTP 401" in (snap.misconfigured_reason or "")
    assert "OPENAI_API_KEY" in (snap.misconfigured_reason or "")


async def test_missing_key_marks_misconfigured_without_calling(
    fault_server: FaultServer, make_router: RouterFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    response = await router.complete(request())
    assert response.provider == "builtin"
    assert "OPENAI_API_KEY is not set" in response.attempts[0].detail
    assert fault_server.requests == []
    assert router.snapshot()[0].misconfigured
    monkeypatch.setenv("OPENAI_API_KEY", "sk-now-set")  # read at request time: works at once
    assert (await router.complete(request())).provider == "openai"


async def test_invalid_structured_output_falls_to_the_next_provider(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.responder = lambda task, inputs, raw: "definitely not json"
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    response = await router.complete(request())
    assert response.provider == "builtin"
    assert response.attempts[0].error_class == "invalid_output"
    assert router.snapshot()[0].state is BreakerState.CLOSED  # the provider itself is healthy


async def test_full_bucket_is_routed_around_without_waiting(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "metered", rpm=2),
                provider_entry(fault_server, "spare", weight=0.0),
            ]
        )
    )
    providers = [(await router.complete(request())).provider for _ in range(4)]
    assert providers == ["metered", "metered", "spare", "spare"]
    clock.advance(30)  # 2 per minute: one request's worth refills in 30 s
    assert (await router.complete(request())).provider == "metered"


async def test_rate_limit_headers_pre_fill_the_buckets(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"limits": {"rpm": 3}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    for _ in range(3):
        assert (await router.complete(request())).provider == "openai"
    snap = router.snapshot()[0]
    assert snap.rpm_limit == 3 and snap.rpm_remaining == 0
    response = await router.complete(request())
    assert response.provider == "builtin"  # routed around the empty bucket: no 429 was provoked
    assert len(fault_server.requests_for("openai", "chat")) == 3


async def test_open_provider_traffic_spreads_by_remaining_capacity(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"down": {"fault": "down"}}})
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "down"),
                provider_entry(fault_server, "roomy", rpm=100_000),
                provider_entry(fault_server, "tight", rpm=100_000),
            ]
        ),
        seed=3,
    )
    # "tight" has used most of its minute: a quarter of its bucket is left
    tight = next(rt for rt in router._runtimes if rt.name == "tight")
    for _ in range(75_000):
        tight.buckets.requests.take(1)
    served = Counter()
    for _ in range(400):
        served[(await router.complete(request())).provider] += 1
    assert router.snapshot()[0].state is BreakerState.OPEN
    assert served["down"] == 0 and served["builtin"] == 0
    ratio = served["roomy"] / served["tight"]
    assert 2.5 < ratio < 6  # about 4 : 1, not 1 : 1 and not all onto one


async def test_subscribe_sees_every_state_change(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script(
        {"providers": {"openai": {"sequence": [{"status": 429, "retry_after_s": 4}]}}}
    )
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    seen: list[ProviderSnapshot] = []
    unsubscribe = router.subscribe(seen.append)
    await router.complete(request())
    clock.advance(4)
    await until(  # the wake-up emits HALF_OPEN with no request touching the provider
        lambda: any(s.name == "openai" and s.state is BreakerState.HALF_OPEN for s in seen),
        "the wake-up task emits HALF_OPEN",
    )
    states = [s.state for s in seen if s.name == "openai"]
    assert BreakerState.OPEN in states and states[-1] is BreakerState.HALF_OPEN
    await router.complete(request())
    assert [s.state for s in seen if s.name == "openai"][-1] is BreakerState.CLOSED
    assert all(isinstance(s.model_dump(mode="json"), dict) for s in seen)
    assert seen[-1].requests_total == 1  # the counter update is coalesced, not sent yet ...
    router._publisher.flush()  # ... until the publisher's 50 ms timer fires (fired by hand here)
    assert seen[-1].name == "openai" and seen[-1].requests_total == 2 and seen[-1].in_flight == 0
    count = len(seen)
    unsubscribe()
    await router.complete(request())
    assert len(seen) == count


async def test_a_failing_subscriber_does_not_break_routing(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = make_router(make_config([provider_entry(fault_server, "openai")]))

    def broken(snapshot: ProviderSnapshot) -> None:
        raise RuntimeError("subscriber bug")

    router.subscribe(broken)
    assert (await router.complete(request())).provider == "openai"


async def test_a_request_waits_once_for_a_bucket_and_goes_when_it_has_room(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """With no other provider, a request waits (on the injected clock) for the bucket to refill,
    within ``capacity_wait_s``, and is sent then: one skip, one answer, nothing in between."""
    router = make_router(
        make_config([provider_entry(fault_server, "metered", rpm=2)], capacity_wait_s=60)
    )
    for _ in range(2):
        assert (await router.complete(request())).provider == "metered"
    waiting = asyncio.ensure_future(router.complete(request()))
    await until(lambda: clock.pending_sleepers == 1, "the request sleeps until the bucket refills")
    assert not waiting.done()
    clock.advance(60)  # the wait is at most twice the bucket's 30 s eta (full jitter)
    await until(waiting.done, "the request goes once the bucket has room")
    response = waiting.result()
    assert response.provider == "metered"
    assert [(a.provider, a.outcome) for a in response.attempts] == [
        ("metered", "skipped"),
        ("metered", "ok"),
    ]
    assert response.attempts[0].detail == "rate-limit bucket has room in 30.00s"


async def test_a_bucket_with_room_within_a_second_is_passed_over_with_its_eta(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """A bucket that has room in half a second is still a full bucket now: passed over, and the
    attempt says when it will have room."""
    router = make_router(
        make_config([provider_entry(fault_server, "metered", rpm=2)], capacity_wait_s=0)
    )
    for _ in range(2):
        assert (await router.complete(request())).provider == "metered"
    clock.advance(29.5)
    response = await router.complete(request())
    assert response.provider == "builtin"
    assert response.attempts[0].detail == "rate-limit bucket has room in 0.50s"
