"""The built-in provider's answers, asserted whole: the response, its attempt, the built-in
provider's snapshot and what the stats file keeps — and its two failures, with what they say;
where its handlers run and how many at once. Where a handler moves the injected clock it runs on
the loop (``builtin_in_thread: false``)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from router.clock import ManualClock
from router.errors import BuiltinHandlerError, NoHandlerError
from router.fault.server import FaultServer, RecordedRequest
from router.local import TaskHandlerRegistry
from router.metrics import ProviderMetrics
from router.models import Attempt, ChatRequest, Usage
from router.stats import StatsStore

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request, until


def registry_taking(clock: ManualClock, seconds: float) -> TaskHandlerRegistry:
    def verify(req: ChatRequest) -> dict[str, Any]:
        clock.advance(seconds)
        return {"verdict": "builtin", "score": 0.1}

    def broken(req: ChatRequest) -> dict[str, Any]:
        raise ZeroDivisionError("handler bug")

    registry = TaskHandlerRegistry()
    registry.register("verify", verify)
    registry.register("broken", broken)
    return registry


async def test_a_fallback_answer_is_recorded_whole(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    tmp_path: Path,
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}}}})

    def takes_half_a_second(record: RecordedRequest) -> None:
        if record.route == "chat":
            clock.advance(0.5)

    fault_server.on_request = takes_half_a_second
    stats = tmp_path / "stats.sqlite3"
    router = make_router(
        make_config([provider_entry(fault_server, "openai")], builtin_in_thread=False),
        task_handlers=registry_taking(clock, 0.25),
        stats_path=stats,
    )
    response = await router.complete(request())
    assert response.attempts[1:] == [
        Attempt(
            provider="builtin", model="builtin-extractive", tier=0, outcome="ok", latency_s=0.25
        )
    ]
    assert json.loads(response.content) == {"verdict": "builtin", "score": 0.1}
    assert response.parsed == Verdict(verdict="builtin", score=0.1)
    assert (response.provider, response.model, response.tier, response.usage) == (
        "builtin",
        "builtin-extractive",
        0,
        Usage(),
    )
    assert response.latency_s == 0.75  # the remote call's half second and the handler's quarter
    assert (response.degraded, response.fallback) == (True, True)
    builtin = {s.name: s for s in router.snapshot()}["builtin"]
    assert (builtin.requests_total, builtin.successes_total, builtin.fallback_total) == (1, 1, 1)
    assert builtin.recent_latencies_s == [0.25]
    assert (builtin.kind, builtin.state, builtin.models) == (
        "local",
        "CLOSED",
        {0: "builtin-extractive"},
    )
    assert (builtin.success_rate, builtin.in_flight, builtin.bulkhead_size) == (1.0, 0, 8)
    latencies = (builtin.ema_latency_s, builtin.p50_latency_s, builtin.p95_latency_s)
    assert latencies + (builtin.p99_latency_s,) == (0.25, 0.25, 0.25, 0.25)
    await router.flush_stats()
    store = StatsStore(stats)
    try:
        stored = store.load()["builtin"]
    finally:
        store.close()
    assert (stored.totals.requests, stored.totals.successes, stored.totals.fallbacks) == (1, 1, 1)
    assert (stored.totals.input_tokens, stored.totals.output_tokens) == (0, 0)
    assert stored.recent == [(True, 0.25)]
    with sqlite3.connect(stats) as db:
        rows = db.execute(
            "SELECT ok, latency_s, error_class FROM provider_calls WHERE provider = 'builtin'"
        ).fetchall()
    assert rows == [(1, 0.25, None)]


async def test_a_failing_handler_is_recorded_as_the_builtins_failure(
    make_router: RouterFactory, clock: ManualClock, tmp_path: Path
) -> None:
    stats = tmp_path / "stats.sqlite3"
    router = make_router(
        make_config([], builtin_in_thread=False),
        task_handlers=registry_taking(clock, 0.25),
        stats_path=stats,
    )
    with pytest.raises(BuiltinHandlerError, match="ZeroDivisionError raised by the handler"):
        await router.complete(request(task="broken"))
    clock.advance(7.0)  # the failure's recency fades: a health score of many digits
    builtin = {s.name: s for s in router.snapshot()}["builtin"]
    assert (builtin.requests_total, builtin.failures_total, builtin.fallback_total) == (1, 1, 0)
    assert builtin.recent_latencies_s == []
    score = router._builtin_metrics.health_score()
    assert builtin.health_score == round(score, 4) != round(score, 5)
    await router.flush_stats()
    with sqlite3.connect(stats) as db:
        rows = db.execute(
            "SELECT ok, latency_s, error_class FROM provider_calls WHERE provider = 'builtin'"
        ).fetchall()
    assert rows == [(0, None, "handler_error")]


async def test_no_handler_says_how_many_remote_attempts_were_made(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    names = ["p0", "p1", "p2"]
    fault_server.set_script({"providers": {n: {"fault": {"status": 500}} for n in names}})
    router = make_router(
        make_config([provider_entry(fault_server, n) for n in names], max_attempts=2)
    )
    with pytest.raises(NoHandlerError) as raised:  # two calls and the router's own note
        await router.complete(request(task="unknown_task"))
    assert "no provider could answer task 'unknown_task': 2 remote attempt(s)" in str(raised.value)
    assert raised.value.task == "unknown_task"


async def test_the_builtins_health_fades_back_at_the_policys_pace(
    make_router: RouterFactory, clock: ManualClock
) -> None:
    """A failure weighs on the built-in provider's health score for ``recency_tau_s``, the
    policy's (10 s here), as it does for every other provider."""
    router = make_router(
        make_config([], builtin_in_thread=False, recency_tau_s=10.0),
        task_handlers=registry_taking(clock, 0.25),
    )
    with pytest.raises(BuiltinHandlerError):
        await router.complete(request(task="broken"))
    oracle = ProviderMetrics(clock, recency_tau_s=10.0)
    oracle.record(False, None)
    clock.advance(7.0)
    builtin = {s.name: s for s in router.snapshot()}["builtin"]
    assert builtin.health_score == round(oracle.health_score(), 4)


async def test_the_builtins_record_survives_a_restart(
    fault_server: FaultServer,
    make_router: RouterFactory,
    clock: ManualClock,
    keys: dict,
    tmp_path: Path,
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}}}})
    stats = tmp_path / "stats.sqlite3"
    config = make_config([provider_entry(fault_server, "openai")], builtin_in_thread=False)
    handlers = registry_taking(clock, 0.25)
    first = make_router(config, task_handlers=handlers, stats_path=stats)
    await first.complete(request())
    with pytest.raises(BuiltinHandlerError):
        await first.complete(request(task="broken"))
    before = {s.name: s for s in first.snapshot()}["builtin"]
    await first.aclose()
    second = make_router(config, task_handlers=handlers, stats_path=stats)
    after = {s.name: s for s in second.snapshot()}["builtin"]
    assert (after.requests_total, after.successes_total, after.failures_total) == (2, 1, 1)
    assert (after.fallback_total, after.recent_latencies_s) == (1, [0.25])
    assert after.success_rate == before.success_rate == 0.5


async def test_the_builtin_is_shown_busy_while_it_answers(
    make_router: RouterFactory, registry: TaskHandlerRegistry
) -> None:
    seen: list[int] = []
    router = make_router(make_config([], builtin_in_thread=False))

    def peek(req: ChatRequest) -> str:
        seen.append({s.name: s for s in router.snapshot()}["builtin"].in_flight)
        return "done"

    registry.register("peek", peek)
    assert (await router.complete(request(task="peek", schema=None))).content == "done"
    assert seen == [1]
    assert {s.name: s for s in router.snapshot()}["builtin"].in_flight == 0


async def test_subscribers_hear_of_the_builtins_answers(
    make_router: RouterFactory, clock: ManualClock, registry: TaskHandlerRegistry
) -> None:
    """The built-in provider's changes reach subscribers as a remote provider's do."""
    router = make_router(make_config([], builtin_in_thread=False))
    registry.register("hello", lambda req: "hi")
    seen: list[tuple[str, int]] = []
    router.subscribe(lambda s: seen.append((s.name, s.requests_total)))
    assert (await router.complete(request(task="hello", schema=None))).content == "hi"
    await until(lambda: clock.pending_sleepers == 1, "the change waits out the notify interval")
    clock.advance(router.NOTIFY_INTERVAL_S)
    await until(lambda: bool(seen), "the built-in provider's snapshot is published")
    assert seen == [("builtin", 1)]


@pytest.mark.parametrize(
    ("policy", "on_the_loop"), [({}, False), ({"builtin_in_thread": False}, True)]
)
async def test_the_builtin_handler_runs_where_the_policy_says(
    policy: dict[str, Any],
    on_the_loop: bool,
    make_router: RouterFactory,
    registry: TaskHandlerRegistry,
) -> None:
    """In a worker thread by default (a slow handler does not stall the loop); on the router's
    loop with ``builtin_in_thread: false``."""
    threads: list[int] = []

    def where(req: ChatRequest) -> str:
        threads.append(threading.get_ident())
        return "here"

    registry.register("where", where)
    router = make_router(make_config([], **policy))
    assert (await router.complete(request(task="where", schema=None))).content == "here"
    assert len(threads) == 1
    assert (threads[0] == threading.get_ident()) is on_the_loop


async def test_the_builtin_answers_at_most_its_concurrency_at_once(
    make_router: RouterFactory, registry: TaskHandlerRegistry
) -> None:
    """With ``builtin_concurrency: 2`` a third request waits for one of two running handlers
    (in worker threads, held until the test lets them finish)."""
    release = threading.Event()

    def held(req: ChatRequest) -> str:
        release.wait(30)
        return "done"

    registry.register("held", held)
    router = make_router(make_config([], builtin_concurrency=2))

    def busy() -> int:
        return {s.name: s for s in router.snapshot()}["builtin"].in_flight

    calls = [
        asyncio.ensure_future(router.complete(request(task="held", schema=None))) for _ in range(3)
    ]
    try:
        await until(lambda: busy() >= 2, "two handlers running")
        for _ in range(50):
            await asyncio.sleep(0)
        assert busy() == 2  # the third waits for a slot
    finally:
        release.set()
    responses = await asyncio.gather(*calls)
    assert [r.content for r in responses] == ["done"] * 3
    assert busy() == 0
