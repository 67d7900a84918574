"""One half-open probe for every process sharing the stats (router/shared_probe.py), on the
SQLite file and on PostgreSQL: two routers with their own store handles reach the end of a
shared cooldown together, exactly one probes the loopback fault server, the other falls back
until the outcome is shared and then adopts it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from router.clock import ManualClock
from router.fault.server import FaultServer
from router.models import BreakerState, ProviderSnapshot
from router.ratelimit_headers import RateLimitInfo
from router.router import SmartModelRouter
from router.stats import ProbeClaim, ProbeOutcome, ProviderStatsStore, StatsStore
from router.stats_postgres import PostgresStatsStore

from .conftest import RouterFactory, make_config, provider_entry, request

IN_ANOTHER = "HALF_OPEN with its probe in flight in another process"


def snap(router: SmartModelRouter, name: str) -> ProviderSnapshot:
    return {s.name: s for s in router.snapshot()}[name]


@pytest.mark.parametrize("recovered", [True, False], ids=["probe-closes", "probe-fails"])
async def test_only_one_process_probes_and_the_other_adopts_its_outcome(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    shared_stats: dict[str, Any],
    recovered: bool,
) -> None:
    providers = [provider_entry(fault_server, "openai")]
    first = make_router(make_config(providers), **shared_stats)
    second = make_router(make_config(providers), seed=8, **shared_stats)
    fault_server.set_script({"providers": {"openai": {"fault": "down"}}})
    for _ in range(100):
        if snap(first, "openai").state is BreakerState.OPEN:
            break
        await first.complete(request())
    await first.sync_shared_state()
    await second.sync_shared_state()  # the trip is shared: both wait out the same cooldown
    assert snap(second, "openai").state is BreakerState.OPEN
    clock.advance(max(snap(r, "openai").cooldown_remaining_s for r in (first, second)))
    assert {snap(r, "openai").state for r in (first, second)} == {BreakerState.HALF_OPEN}

    script: dict[str, Any] = {"health": "ok"}  # chat answers again, or still 500
    fault_server.set_script(
        {"providers": {"openai": script if recovered else {**script, "fault": {"status": 500}}}}
    )
    fault_server.clear_requests()
    # the first's probe is held at its health check, holding the shared lease
    provider = first._by_name["openai"].provider
    check = provider.health
    entered, gate = asyncio.Event(), asyncio.Event()

    async def held_check(timeout_s: float) -> RateLimitInfo:
        entered.set()
        await gate.wait()
        return await check(timeout_s)

    provider.health = held_check  # type: ignore[method-assign]
    probing = asyncio.create_task(first.complete(request()))
    await entered.wait()
    for _ in range(3):  # the second keeps falling back while the probe is out
        refused = await second.complete(request())
        assert refused.provider == "builtin"
        assert refused.attempts[0].detail == IN_ANOTHER
    assert fault_server.requests_for("openai") == []  # the second sent nothing
    gate.set()
    probed = await probing
    assert [a.outcome for a in probed.attempts][:2] == ["probe_ok", "ok" if recovered else "failed"]
    await first.wait_for_writes()  # the lease released with the probe's outcome

    adopting = await second.complete(request())  # refused once more, now with the outcome
    assert adopting.provider == "builtin" and adopting.attempts[0].detail == IN_ANOTHER
    mine, theirs = snap(second, "openai"), snap(first, "openai")
    assert mine.state is theirs.state is (BreakerState.CLOSED if recovered else BreakerState.OPEN)
    assert mine.consecutive_trips == theirs.consecutive_trips
    assert mine.cooldown_remaining_s == pytest.approx(theirs.cooldown_remaining_s)
    # exactly one probe reached the provider: one health check, one real call
    assert len(fault_server.requests_for("openai", "health")) == 1
    assert len(fault_server.requests_for("openai", "chat")) == 1
    if recovered:
        assert (await second.complete(request())).provider == "openai"


@pytest.fixture(params=["sqlite", "postgres"])
def two_handles(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[list[ProviderStatsStore]]:
    """Two handles on one shared stats store, as two processes hold them."""
    stores: list[ProviderStatsStore]
    if request.param == "sqlite":
        stores = [StatsStore(tmp_path / "provider_stats.sqlite3") for _ in range(2)]
    else:
        address = request.getfixturevalue("pg_database")
        stores = [PostgresStatsStore(address) for _ in range(2)]
    yield stores
    for store in stores:
        store.close()


def test_the_lease_goes_to_one_claimant_expires_and_carries_the_outcome(
    two_handles: list[ProviderStatsStore],
) -> None:
    a, b = two_handles
    assert a.claim_probe("p", "a", 100.0, 110.0, 99.0) == ProbeClaim(True)
    assert b.claim_probe("p", "b", 105.0, 115.0, 99.0) == ProbeClaim(False)  # held, not expired
    assert b.claim_probe("q", "b", 105.0, 115.0, 99.0) == ProbeClaim(True)  # one row per provider
    assert b.claim_probe("p", "b", 110.0, 120.0, 99.0) == ProbeClaim(True)  # a's lease expired
    a.release_probe("p", "a", ProbeOutcome("open", 1.0, 9, "x", 111.0, 111.0))  # no longer a's
    assert a.claim_probe("p", "a", 112.0, 122.0, 99.0) == ProbeClaim(False)
    failed = ProbeOutcome("open", 30.0, 2, "probe failed: server", 112.5, 113.0)
    b.release_probe("p", "b", failed)
    # a claimant whose breaker went HALF_OPEN before that outcome adopts it instead of probing
    assert a.claim_probe("p", "a", 113.0, 123.0, 112.0) == ProbeClaim(False, failed)
    # one whose breaker changed after it (it adopted it, then its own cooldown ended) probes
    assert a.claim_probe("p", "a", 143.0, 153.0, 142.5) == ProbeClaim(True)
    a.release_probe("p", "a", None)  # unjudged: the earlier outcome stays, the lease is free
    assert b.claim_probe("p", "b", 144.0, 154.0, 112.0) == ProbeClaim(False, failed)
    assert b.claim_probe("p", "b", 144.0, 154.0, 143.0) == ProbeClaim(True)
