"""What subscribers see of a call while it is in flight, on the injected clock: the provider
being called is reported busy within one notify interval, and free again once it answered."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from router.clock import ManualClock
from router.errors import ErrorClass
from router.fault.server import FaultServer
from router.models import BreakerState, ChatMessage, ChatRequest, ProviderSnapshot
from router.stats import BreakerRecord, StatsStore

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request, until


async def test_subscribers_see_the_called_provider_busy_then_free(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": "hold"}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    seen: list[ProviderSnapshot] = []
    router.subscribe(seen.append)
    call = asyncio.ensure_future(router.complete(request()))
    await until(lambda: fault_server.held == 1, "the answer is half-sent and held")
    assert clock.pending_sleepers == 1  # the coalescing waits on the router's clock
    clock.advance(router.NOTIFY_INTERVAL_S)
    await until(lambda: bool(seen), "the coalesced snapshot is published")
    assert [(s.name, s.in_flight) for s in seen] == [("openai", 1)]
    fault_server.release_held()
    response = await call
    assert response.provider == "openai"
    clock.advance(router.NOTIFY_INTERVAL_S)
    await until(lambda: len(seen) == 2, "the end of the call is published")
    assert [(s.name, s.in_flight, s.successes_total) for s in seen] == [
        ("openai", 1, 0),
        ("openai", 0, 1),
    ]


async def test_a_break_of_a_second_ends_in_a_published_half_open_without_any_request(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """The wake-up waits out the whole cooldown, however short, then is done."""
    fault_server.set_script(
        {"providers": {"openai": {"sequence": [{"status": 429, "retry_after_s": 1}]}}}
    )
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    seen: list[ProviderSnapshot] = []
    router.subscribe(seen.append)
    await router.complete(request())
    assert [s.state for s in seen if s.name == "openai"] == [BreakerState.OPEN]
    wake = router._wake_tasks["openai"]
    for _ in range(10):
        await asyncio.sleep(0)
    assert not wake.done()  # it sleeps out the second on the router's clock
    clock.advance(router.NOTIFY_INTERVAL_S)  # the call's coalesced snapshot goes out now ...
    await until(lambda: len(seen) > 1, "the coalesced snapshot is published")
    clock.advance(1.0 - router.NOTIFY_INTERVAL_S)  # ... so only the wake-up can see the end
    await until(wake.done, "the wake-up ends once the break is over")
    states = [s.state for s in seen if s.name == "openai"]
    assert states[0] is BreakerState.OPEN and states[-1] is BreakerState.HALF_OPEN


async def test_a_closed_router_starts_no_wake_up(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    """A breaker that opens after the router closed (a call that ended late) leaves no wake-up
    running on the loop."""
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    await router.complete(request())  # serving: the router is bound to this loop
    await router.aclose()
    router._by_name["openai"].breaker.force_open(ErrorClass.SERVER, "a late failure")
    assert router._wake_tasks == {}


async def test_a_transition_seen_from_another_thread_is_published_on_the_routers_loop(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """A UI thread asking for a snapshot may be the one to notice a model's break is over; the
    transition is handed to the router's loop and published there."""
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
    published: list[tuple[int, dict[str, str]]] = []
    router.subscribe(lambda s: published.append((threading.get_ident(), s.unhealthy_models)))
    clock.advance(router._by_name["azure"].models.breaker("azure-model").cooldown_remaining())
    await asyncio.to_thread(router.snapshot)  # another thread notices OPEN -> HALF_OPEN
    await until(lambda: bool(published), "the transition is published")
    assert published[0][0] == threading.get_ident()  # on the router's loop thread
    assert published[0][1]["azure-model"].startswith("HALF_OPEN")


async def test_a_stored_break_gets_its_wake_up_when_the_router_starts_serving(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    tmp_path: Path,
) -> None:
    """No shared-state poll in the way (an hour apart): only the wake-up scheduled for the
    stored break can publish its end."""
    stats = tmp_path / "s.sqlite3"
    store = StatsStore(stats)
    now = clock.wall()
    store.write(
        [], [BreakerRecord("a", "OPEN", 5.0, 1, "server", None, None, False, None, now, now)]
    )
    store.close()
    router = make_router(
        make_config(
            [provider_entry(fault_server, "a"), provider_entry(fault_server, "b")],
            shared_state_poll_s=3600,
        ),
        stats_path=stats,
    )
    seen: list[ProviderSnapshot] = []
    router.subscribe(seen.append)
    assert (await router.complete(request())).provider == "b"  # binds the router to its loop
    clock.advance(router.NOTIFY_INTERVAL_S)
    await until(lambda: bool(seen), "the call's coalesced snapshots go out")
    clock.advance(5.0)
    await until(
        lambda: any(s.name == "a" and s.state is BreakerState.HALF_OPEN for s in seen),
        "the stored break ends and its transition is published",
    )
