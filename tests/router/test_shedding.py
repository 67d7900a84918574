"""Load shedding when more than half the providers are OPEN: low shed, medium queued (bounded), high served."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from router.clock import ManualClock
from router.fault.server import FaultServer
from router.models import BreakerState

from .conftest import RouterFactory, make_config, provider_entry, request, until


async def shedding_router(
    fault_server: FaultServer, make_router: RouterFactory, d_slots: int = 10, **policy: object
):
    down = {n: {"fault": "down"} for n in ("a", "b", "c")}
    fault_server.set_script({"providers": down})
    router = make_router(
        make_config(
            [
                provider_entry(
                    fault_server,
                    n,
                    weight=0.0 if n == "d" else 1.0,
                    bulkhead=d_slots if n == "d" else 10,
                )
                for n in ("a", "b", "c", "d")
            ],
            **policy,
        )
    )
    for _ in range(200):
        states = {s.name: s.state for s in router.snapshot()}
        if all(states[n] is BreakerState.OPEN for n in ("a", "b", "c")):
            break
        await router.complete(request(priority="high"))
    assert all(
        {s.name: s.state for s in router.snapshot()}[n] is BreakerState.OPEN
        for n in ("a", "b", "c")
    )
    fault_server.set_script({"providers": {**down, "d": {"latency_s": 0.2}}})
    fault_server.clear_requests()
    return router


async def test_low_priority_is_shed_to_the_builtin(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = await shedding_router(fault_server, make_router)
    response = await router.complete(request(priority="low"))
    assert response.provider == "builtin" and response.degraded
    assert response.attempts[0].detail.startswith("load shedding (3/4 providers OPEN)")
    assert (response.attempts[0].provider, response.attempts[0].outcome) == ("router", "skipped")
    assert fault_server.requests == []


async def test_high_priority_is_served(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = await shedding_router(fault_server, make_router)
    responses = await asyncio.gather(*(router.complete(request(priority="high")) for _ in range(8)))
    assert {r.provider for r in responses} == {"d"}
    assert fault_server.max_in_flight("d") == 8  # no gate for high priority


async def test_medium_priority_is_queued_and_bounded(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = await shedding_router(
        fault_server, make_router, d_slots=2, shed_medium_concurrency=2, shed_queue_size=3
    )
    responses = await asyncio.gather(
        *(router.complete(request(priority="medium")) for _ in range(10))
    )
    counts = Counter(r.provider for r in responses)
    assert counts == {
        "d": 5,
        "builtin": 5,
    }  # 2 served at once, 3 queued then served, 5 beyond the queue
    assert fault_server.max_in_flight("d") == 2
    queued = [r for r in responses if any(a.detail.startswith("queued") for a in r.attempts)]
    assert len(queued) == 3
    full = [r for r in responses if any("queue is full" in a.detail for a in r.attempts)]
    assert len(full) == 5


async def test_medium_queue_wait_is_bounded(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    router = await shedding_router(
        fault_server, make_router, d_slots=1, shed_medium_concurrency=1, shed_queue_wait_s=5
    )
    fault_server.set_script({"providers": {"d": {"latency_s": 0.3}}})
    first = asyncio.ensure_future(router.complete(request(priority="medium")))
    second = asyncio.ensure_future(router.complete(request(priority="medium")))
    await until(lambda: router._shedder.waiting == 1, "the second request queues")
    clock.advance(5)
    late = await second
    assert late.provider == "builtin"
    assert any("without a turn" in a.detail for a in late.attempts)
    assert (await first).provider == "d"


async def test_a_healthy_providers_free_slots_are_never_left_idle_while_requests_queue(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = await shedding_router(
        fault_server, make_router, d_slots=10, shed_medium_concurrency=2, shed_queue_size=3
    )
    responses = await asyncio.gather(
        *(router.complete(request(priority="medium")) for _ in range(10))
    )
    assert Counter(r.provider for r in responses) == {"d": 10}  # all ten of d's slots used
    assert router._by_name["d"].bulkhead.peak == 10  # at once: none of them waited
    assert not any(a.detail.startswith("queued") for r in responses for a in r.attempts)


async def test_a_queued_request_takes_a_slot_as_soon_as_one_frees(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = await shedding_router(
        fault_server, make_router, d_slots=3, shed_medium_concurrency=1, shed_queue_size=10
    )
    responses = await asyncio.gather(
        *(router.complete(request(priority="medium")) for _ in range(9))
    )
    assert Counter(r.provider for r in responses) == {"d": 9}  # queued ones got d's freed slots
    assert router._by_name["d"].bulkhead.peak == 3


async def test_no_shedding_at_half_or_fewer_open(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"a": {"fault": "down"}}})
    router = make_router(make_config([provider_entry(fault_server, n) for n in ("a", "b")]))
    for _ in range(100):
        if router.snapshot()[0].state is BreakerState.OPEN:
            break
        await router.complete(request())
    else:
        raise AssertionError("a never opened")
    response = await router.complete(request(priority="low"))
    assert response.provider == "b"


async def test_a_queued_request_wakes_when_a_slot_frees_not_only_when_a_turn_does(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    """The one medium turn is held by a call still running; a high-priority call (which takes no
    turn) ends and frees a slot of d: the queued request goes at once."""
    router = await shedding_router(
        fault_server, make_router, d_slots=2, shed_medium_concurrency=1, shed_queue_size=10
    )
    provider = router._by_name["d"].provider
    chat = provider.chat
    gates: list[asyncio.Event] = []

    async def gated(spec: Any, timeout_s: float) -> Any:
        gate = asyncio.Event()
        gates.append(gate)
        await gate.wait()  # each call waits until the test lets it go
        return await chat(spec, timeout_s)

    provider.chat = gated  # type: ignore[method-assign]
    holding_the_turn = asyncio.ensure_future(router.complete(request(priority="medium")))
    await until(lambda: len(gates) == 1, "the medium call holds the one turn")
    high = asyncio.ensure_future(router.complete(request(priority="high")))
    await until(lambda: len(gates) == 2, "the high call takes d's other slot")
    queued = asyncio.ensure_future(router.complete(request(priority="medium")))
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(gates) == 2 and not queued.done()  # no turn, no free slot: it waits
    gates[1].set()
    assert (await high).provider == "d"
    await until(lambda: len(gates) == 3, "the queued request takes the freed slot at once")
    assert not holding_the_turn.done()
    gates[0].set()
    gates[2].set()
    responses = [await holding_the_turn, await queued]
    assert [r.provider for r in responses] == ["d", "d"]
