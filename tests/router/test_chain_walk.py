"""The chain walk's own decisions, asserted whole: where it stops (the attempt budget, the
request's deadline, the capacity wait budget) and what it says when it does. Real loopback
calls; the fault server moves the injected clock while it answers where time must pass."""

from __future__ import annotations

import asyncio

from router.clock import ManualClock
from router.fault.server import FaultServer, RecordedRequest
from router.models import Attempt

from .conftest import RouterFactory, make_config, provider_entry, request, until


async def test_the_attempt_budget_ends_the_walk_and_says_so(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    names = ["p0", "p1", "p2", "p3"]
    fault_server.set_script({"providers": {n: {"fault": {"status": 500}} for n in names}})
    router = make_router(
        make_config([provider_entry(fault_server, n) for n in names], max_attempts=2)
    )
    response = await router.complete(request())
    assert [(a.outcome, a.provider in names) for a in response.attempts] == [
        ("failed", True),
        ("failed", True),
        ("skipped", False),
        ("ok", False),
    ]
    assert response.attempts[2].provider == "router"
    assert response.attempts[2].detail == "2 remote attempts made; no more"
    assert response.provider == "builtin"


async def test_the_requests_deadline_ends_the_walk_the_moment_it_is_reached(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """The first call fails after exactly the request's 0.2 s: the deadline has come (not passed
    by a hair), so no second provider is tried."""
    fault_server.set_script({"providers": {"first": {"fault": {"status": 500}}}})

    def takes_the_whole_deadline(record: RecordedRequest) -> None:
        if record.route == "chat":
            clock.advance(0.2)

    fault_server.on_request = takes_the_whole_deadline
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "first", weight=1000.0),
                provider_entry(fault_server, "second"),
            ]
        )
    )
    response = await router.complete(request(timeout_s=0.2))
    assert [(a.provider, a.outcome, a.detail) for a in response.attempts[1:]] == [
        ("router", "skipped", "request deadline passed"),
        ("builtin", "ok", ""),
    ]
    assert response.attempts[0].provider == "first"
    assert fault_server.requests_for("second", "chat") == []


async def test_a_bucket_beyond_the_wait_budget_is_not_waited_for(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    router = make_router(
        make_config([provider_entry(fault_server, "metered", rpm=2)], capacity_wait_s=10)
    )
    for _ in range(2):
        assert (await router.complete(request())).provider == "metered"
    asked = asyncio.ensure_future(router.complete(request()))  # room in 30 s: over the budget
    await until(asked.done, "the request gives up at once, without sleeping")
    response = asked.result()
    assert [(a.provider, a.outcome, a.detail) for a in response.attempts] == [
        ("metered", "skipped", "rate-limit bucket has room in 30.00s"),
        ("router", "skipped", "no capacity freed within the wait budget"),
        ("builtin", "ok", ""),
    ]
    assert clock.pending_sleepers == 0


async def test_a_bucket_with_room_exactly_at_the_end_of_the_budget_is_waited_for(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """Room in 30 s with a 30 s budget: the request sleeps the whole budget (the jittered wait is
    capped by it), wakes once, and is sent."""
    router = make_router(
        make_config([provider_entry(fault_server, "metered", rpm=2)], capacity_wait_s=30)
    )
    for _ in range(2):
        assert (await router.complete(request())).provider == "metered"
    waiting = asyncio.ensure_future(router.complete(request()))
    await until(lambda: clock.pending_sleepers == 1, "the request sleeps until the bucket refills")
    clock.advance(29.9)
    await asyncio.sleep(0)
    assert not waiting.done() and clock.pending_sleepers == 1  # still the same one sleep
    clock.advance(0.1)
    await until(waiting.done, "the request goes once the bucket has room")
    response = waiting.result()
    assert [(a.provider, a.outcome, a.detail) for a in response.attempts] == [
        ("metered", "skipped", "rate-limit bucket has room in 30.00s"),
        ("metered", "ok", ""),
    ]


async def test_of_two_full_buckets_the_request_waits_for_the_sooner(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """One bucket has room in 15 s, the next one passed over in 30 s; a 20 s budget is enough
    for the sooner, found first."""
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "slowfill", rpm=2),
                provider_entry(fault_server, "fastfill", rpm=4, weight=1000.0),  # passed first
            ],
            capacity_wait_s=20,
        )
    )
    for _ in range(6):  # both buckets emptied
        assert (await router.complete(request())).provider in ("slowfill", "fastfill")
    waiting = asyncio.ensure_future(router.complete(request()))
    await until(lambda: clock.pending_sleepers == 1, "the request sleeps for the sooner bucket")
    clock.advance(20)
    await until(waiting.done, "the request goes once the sooner bucket has room")
    response = waiting.result()
    assert response.provider == "fastfill"
    assert [(a.provider, a.detail) for a in response.attempts[:2]] == [
        ("fastfill", "rate-limit bucket has room in 15.00s"),
        ("slowfill", "rate-limit bucket has room in 30.00s"),
    ]


async def test_the_wait_for_capacity_ends_at_the_requests_deadline(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """A 60 s budget, but the request has 10 s: room in 30 s is not waited for."""
    router = make_router(
        make_config([provider_entry(fault_server, "metered", rpm=2)], capacity_wait_s=60)
    )
    for _ in range(2):
        assert (await router.complete(request())).provider == "metered"
    response = await router.complete(request(timeout_s=10))
    assert [(a.provider, a.detail) for a in response.attempts][1:] == [
        ("router", "no capacity freed within the wait budget"),
        ("builtin", ""),
    ]
    assert clock.pending_sleepers == 0


async def test_the_jittered_wait_lies_between_one_and_two_etas(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """Room in 30 s, a budget of 100 s: the request sleeps once, at least 30 s and under 60 s
    (full jitter over one more eta), then goes."""
    router = make_router(
        make_config([provider_entry(fault_server, "metered", rpm=2)], capacity_wait_s=100)
    )
    for _ in range(2):
        assert (await router.complete(request())).provider == "metered"
    waiting = asyncio.ensure_future(router.complete(request()))
    await until(lambda: clock.pending_sleepers == 1, "the request sleeps")
    clock.advance(29.99)
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done()
    clock.advance(30.0)
    await until(waiting.done, "the request goes within two etas")
    assert [(a.provider, a.outcome) for a in waiting.result().attempts] == [
        ("metered", "skipped"),
        ("metered", "ok"),
    ]


async def test_a_bucket_with_room_within_a_second_is_waited_for_within_a_one_second_budget(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    router = make_router(
        make_config([provider_entry(fault_server, "metered", rpm=2)], capacity_wait_s=1)
    )
    for _ in range(2):
        assert (await router.complete(request())).provider == "metered"
    clock.advance(29.5)
    waiting = asyncio.ensure_future(router.complete(request()))
    await until(lambda: clock.pending_sleepers == 1, "the request sleeps half a second or so")
    clock.advance(1.0)
    await until(waiting.done, "the request goes once the bucket has room")
    assert [(a.provider, a.outcome, a.detail) for a in waiting.result().attempts] == [
        ("metered", "skipped", "rate-limit bucket has room in 0.50s"),
        ("metered", "ok", ""),
    ]


async def test_a_provider_serving_two_tiers_is_called_once_per_request(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"big": {"fault": {"status": 500}}}})
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "big", models={2: "big-2", 1: "big-1"}),
                provider_entry(fault_server, "small", models={1: "small-1"}, weight=0.0),
            ]
        )
    )
    response = await router.complete(request(tier=2))
    assert [(a.provider, a.model, a.outcome) for a in response.attempts] == [
        ("big", "big-2", "failed"),
        ("small", "small-1", "ok"),
    ]
    assert len(fault_server.requests_for("big", "chat")) == 1


async def test_a_provider_passed_over_is_noted_once_with_the_model_and_tier_it_was_asked_for(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = make_router(
        make_config(
            [provider_entry(fault_server, "metered", models={2: "m-2", 1: "m-1"}, rpm=1)],
            capacity_wait_s=0,
        )
    )
    assert (await router.complete(request(tier=2))).provider == "metered"
    response = await router.complete(request(tier=2))
    assert response.attempts[:2] == [
        Attempt(
            provider="metered",
            model="m-2",
            tier=2,
            outcome="skipped",
            detail="rate-limit bucket has room in 60.00s",
        ),
        Attempt(
            provider="router", outcome="skipped", detail="no capacity freed within the wait budget"
        ),
    ]
    assert response.provider == "builtin"


async def test_with_every_attempt_made_the_request_does_not_wait_for_capacity(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """One remote attempt allowed: the full bucket passed over first is not waited for once the
    attempt has been spent on the next provider."""
    fault_server.set_script({"providers": {"failing": {"fault": {"status": 500}}}})
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "metered", models={2: "metered-2"}, rpm=1),
                provider_entry(fault_server, "failing", models={1: "failing-1"}),
            ],
            max_attempts=1,
            capacity_wait_s=60,
        )
    )
    assert (await router.complete(request(tier=2))).provider == "metered"  # its one a minute
    asked = asyncio.ensure_future(router.complete(request(tier=2)))
    await until(asked.done, "the request ends without waiting for the bucket")
    assert [(a.provider, a.outcome) for a in asked.result().attempts] == [
        ("metered", "skipped"),
        ("failing", "failed"),
        ("builtin", "ok"),
    ]


async def test_with_no_wait_budget_a_full_bulkhead_is_not_waited_for(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"one": {"fault": "hold"}}})
    router = make_router(
        make_config([provider_entry(fault_server, "one", bulkhead=1)], capacity_wait_s=0)
    )
    busy = asyncio.ensure_future(router.complete(request()))
    await until(lambda: fault_server.held == 1, "the one slot is taken by a held answer")
    asked = asyncio.ensure_future(router.complete(request()))
    await until(asked.done, "the request gives up at once instead of waiting for the slot")
    assert [(a.provider, a.outcome, a.detail) for a in asked.result().attempts] == [
        ("one", "skipped", "bulkhead full (1 in flight)"),
        ("router", "skipped", "no capacity freed within the wait budget"),
        ("builtin", "ok", ""),
    ]
    fault_server.release_held()
    assert (await busy).provider == "one"
