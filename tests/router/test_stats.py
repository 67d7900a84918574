"""Provider stats in SQLite WAL and in PostgreSQL: several processes at once, persistence across
runs, monotonic offsets."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from plumbing.workspace import PROVIDER_STATS_FILE as STATS_FILENAME
from router.clock import ManualClock
from router.fault.server import FaultServer
from router.models import BreakerState
from router.stats import (
    BreakerRecord,
    CallRecord,
    ProviderStatsStore,
    StatsRecorder,
    StatsStore,
)

from .conftest import RouterFactory, make_config, provider_entry, request

WRITES_PER_PROCESS = 300
BACKENDS = pytest.mark.parametrize("backend", ["sqlite", "postgres"])


def _open(location: str, keep_calls: int = 200) -> ProviderStatsStore:
    """The stats store at ``location``: an SQLite file, or a PostgreSQL address."""
    if location.startswith("postgresql://"):
        from router.stats_postgres import PostgresStatsStore

        return PostgresStatsStore(location, keep_calls=keep_calls)
    return StatsStore(Path(location), keep_calls=keep_calls)


@pytest.fixture
def location(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "postgres":
        address: str = request.getfixturevalue("pg_database")
        return address
    return str(tmp_path / STATS_FILENAME)


def _writer(location: str, index: int, barrier: object) -> None:
    store = _open(location, keep_calls=50)
    recorder = StatsRecorder(store)
    barrier.wait()  # type: ignore[attr-defined]
    for i in range(WRITES_PER_PROCESS):
        ok = i % 3 != 0
        for provider in ("shared", f"own{index}"):
            recorder.add_call(
                CallRecord(provider, ok, 0.01 * (i % 7), None if ok else "server", 10, 5, 1.0 + i)
            )
        if i % 10 == 9:
            recorder.set_breaker(
                BreakerRecord(
                    "shared",
                    "OPEN" if i % 20 == 19 else "CLOSED",
                    5.0,
                    index,
                    None,
                    None,
                    None,
                    False,
                    None,
                    1.0,
                    2.0,
                )
            )
            recorder.flush()
    recorder.flush()
    store.close()


@BACKENDS
def test_four_processes_writing_at_once_lose_nothing(location: str, backend: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    workers = [ctx.Process(target=_writer, args=(location, i, barrier)) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]

    store = _open(location, keep_calls=50)
    loaded = store.load(recent=1000)
    successes = sum(1 for i in range(WRITES_PER_PROCESS) if i % 3 != 0)
    assert loaded["shared"].totals.requests == 4 * WRITES_PER_PROCESS
    assert loaded["shared"].totals.successes == 4 * successes
    assert loaded["shared"].totals.failures == 4 * (WRITES_PER_PROCESS - successes)
    assert loaded["shared"].totals.input_tokens == 4 * WRITES_PER_PROCESS * 10
    for i in range(4):
        assert loaded[f"own{i}"].totals.requests == WRITES_PER_PROCESS
        assert len(loaded[f"own{i}"].recent) == 50  # pruned to keep_calls
    assert loaded["shared"].breaker is not None and loaded[
        "shared"
    ].breaker.consecutive_trips in range(4)
    store.close()
    if backend == "sqlite":
        assert StatsStore(Path(location)).integrity_ok()
        with sqlite3.connect(location) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@BACKENDS
def test_cooldowns_are_stored_as_offsets(location: str) -> None:
    store = _open(location)
    store.write(
        [], [BreakerRecord("p", "OPEN", 30.0, 1, "x", "server", 503, False, None, 100.0, 1000.0)]
    )
    stored = store.load()["p"]
    assert stored.cooldown_remaining(1000.0) == 30.0
    assert stored.cooldown_remaining(1010.0) == 20.0
    assert stored.cooldown_remaining(990.0) == 30.0  # a wall clock stepped back cannot lengthen it
    assert stored.cooldown_remaining(2000.0) == 0.0
    store.close()


@BACKENDS
async def test_breaker_state_and_history_survive_a_restart(
    backend: str,
    location: str,
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    tmp_path: Path,
    keys: dict,
) -> None:
    fault_server.set_script(
        {"providers": {"openai": {"sequence": ["ok", "ok", {"status": 429, "retry_after_s": 40}]}}}
    )
    config = make_config([provider_entry(fault_server, "openai")])
    database = location if backend == "postgres" else None
    first = make_router(config, stats_path=tmp_path, stats_database=database)
    for _ in range(3):
        await first.complete(request())
    assert first.snapshot()[0].state is BreakerState.OPEN
    await first.aclose()
    assert (tmp_path / STATS_FILENAME).exists() == (backend == "sqlite")

    later = ManualClock(start=5.0, wall_start=clock.wall() + 10)  # another process, 10 s later
    second = make_router(config, stats_path=tmp_path, clock=later, stats_database=database)
    snap = second.snapshot()[0]
    assert snap.state is BreakerState.OPEN
    assert snap.cooldown_remaining_s == pytest.approx(30.0)
    assert snap.requests_total == 3 and snap.success_rate == pytest.approx(2 / 3)
    assert snap.last_error == "rate_limit"
    fault_server.clear_requests()
    assert (await second.complete(request())).provider == "builtin"
    assert (
        fault_server.requests == []
    )  # a restart does not hammer a provider that is still in its break


@BACKENDS
async def test_an_unwritable_store_does_not_break_routing(
    backend: str,
    location: str,
    tmp_path: Path,
    make_router: RouterFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    database = location if backend == "postgres" else None
    router = make_router(make_config([]), stats_path=tmp_path, stats_database=database)
    router._stats.close()  # type: ignore[union-attr]
    assert (await router.complete(request())).provider == "builtin"
    await router.flush_stats()
    assert (await router.complete(request())).provider == "builtin"
    await router.flush_stats()
    # the records are kept for a later flush, and the failure is logged once, not per flush
    assert router._recorder is not None and router._recorder.pending == 2
    warnings = [r for r in caplog.records if "could not be written" in r.getMessage()]
    assert len(warnings) == 1


async def test_stats_path_may_be_a_workspace_not_yet_created(
    tmp_path: Path, make_router: RouterFactory
) -> None:
    workspace = tmp_path / "new" / "workspace"
    router = make_router(make_config([]), stats_path=workspace)
    await router.complete(request())
    await router.aclose()
    assert (workspace / STATS_FILENAME).is_file()
    explicit = tmp_path / "elsewhere.sqlite3"
    other = make_router(make_config([]), stats_path=explicit)
    await other.aclose()
    assert explicit.is_file()
