"""The chain walk's own decisions, asserted whole: where it stops (the attempt budget, the
request's deadline, the capacity wait budget) and what it says when it does. Real loopback
calls; the fault server moves the injected clock while it answers where time must pass."""

from __future__ import annotations

import asyncio

from router.clock import ManualClock
from router.fault_server import FaultServer, RecordedRequest

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
    response = await router.complete(request())  # the bucket has room in 30 s: over the budget
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
    """One bucket has room in 30 s, the other in 15 s; a 20 s budget is enough for the sooner."""
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "slowfill", rpm=2),
                provider_entry(fault_server, "fastfill", rpm=4),
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
    assert sorted(a.detail for a in response.attempts[:2]) == [
        "rate-limit bucket has room in 15.00s",
        "rate-limit bucket has room in 30.00s",
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
