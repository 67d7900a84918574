"""When the router writes its statistics on its own: at most every ``stats_flush_s``, so with 0
every answer is in the stats file as soon as the write started for it has finished."""

from __future__ import annotations

from pathlib import Path

from router.clock import ManualClock
from router.fault.server import FaultServer
from router.models import BreakerState
from router.stats import StatsStore

from .conftest import RouterFactory, make_config, provider_entry, request, until


async def test_with_no_flush_interval_every_answer_is_written_as_it_comes(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict, tmp_path: Path
) -> None:
    stats = tmp_path / "stats.sqlite3"
    router = make_router(
        make_config([provider_entry(fault_server, "openai")], stats_flush_s=0.000001),
        stats_path=stats,
    )
    for expected in (1, 2):
        await router.complete(request())
        await router.wait_for_writes()  # no flush asked for: the router started it itself
        store = StatsStore(stats)
        try:
            assert store.load()["openai"].totals.requests == expected
        finally:
            store.close()


async def test_within_the_flush_interval_an_answer_waits_for_the_next_write(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict, tmp_path: Path
) -> None:
    """Only a trip is written at once; an answer waits for the interval (an hour here)."""
    stats = tmp_path / "stats.sqlite3"
    router = make_router(
        make_config([provider_entry(fault_server, "openai")], stats_flush_s=3600),
        stats_path=stats,
    )
    await router.complete(request())
    await router.wait_for_writes()
    store = StatsStore(stats)
    try:
        assert "openai" not in store.load()
    finally:
        store.close()
    await router.flush_stats()
    store = StatsStore(stats)
    try:
        assert store.load()["openai"].totals.requests == 1
    finally:
        store.close()


async def test_a_trip_is_written_at_once_and_its_recovery_with_the_next_write(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    tmp_path: Path,
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}}}})
    stats = tmp_path / "stats.sqlite3"
    router = make_router(
        make_config([provider_entry(fault_server, "openai")], stats_flush_s=3600),
        stats_path=stats,
    )
    breaker = router._by_name["openai"].breaker
    for _ in range(100):
        if breaker.state is BreakerState.OPEN:
            break
        await router.complete(request())
    await router.wait_for_writes()
    assert stored_state(stats) == "OPEN"  # every process sharing the file learns it now
    fault_server.set_script({"providers": {}})
    polls = router.shared_state_syncs
    clock.advance(breaker.cooldown_remaining())  # the break ends; the shared-state poll runs
    await until(lambda: router.shared_state_syncs > polls, "the poll after the advance")
    assert (await router.complete(request())).provider == "openai"
    assert breaker.state is BreakerState.CLOSED
    await router.wait_for_writes()
    assert stored_state(stats) != "CLOSED"  # a recovery is not urgent: it waits its turn
    await router.flush_stats()
    assert stored_state(stats) == "CLOSED"


def stored_state(stats: Path) -> str | None:
    store = StatsStore(stats)
    try:
        breaker = store.load()["openai"].breaker
    finally:
        store.close()
    return None if breaker is None else breaker.state
