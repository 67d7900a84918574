"""Router benchmarks (`make bench`): overhead, recovery after a rate limit, goodput under chaos.

Figures are printed side by side; nothing here asserts a time.

1. Overhead per request of ``SmartModelRouter.complete`` against an instant in-process
   provider (target: <= 50 us p50), bare and with stats persistence and a subscriber.
2. Recovery after a 429: injected time until traffic returns to the provider when the
   router honours ``Retry-After: 3``, and when no Retry-After comes (the break is probed
   from about a second on; ADR-002's 120 s is the ceiling), against the real fault
   server over loopback.
3. Goodput in a chaos scenario: the shipped chaos script on the fault server (six
   providers, 60 s of scripted faults played at time scale 0.25 with the router's
   policy scaled alike), the router versus a naive fixed-order fallback loop with
   no breakers: requests answered remotely, wasted calls to failing providers, p95.
4. Recovery after every provider was down for 10 s (injected clock, a request every
   0.1 s): injected time from their recovery to the first real answer, answers left to
   the built-in provider after the recovery, health probes per provider per second of
   the outage, and client-visible failures (exceptions).
5. The typical outage — health endpoint up, chat answering 500 for 10 minutes: how the
   break grows (trips, cooldown ceiling) and how many chat calls the outage wastes.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from router.build import _client, build_router
from router.clock import ManualClock
from router.config import RouterConfig, load_router_config
from router.errors import ProviderCallError
from router.fault.demo import demo_router_config
from router.fault.script import DEFAULT_SCRIPT_PATH, load_fault_script
from router.fault.server import FaultServer
from router.local import TaskHandlerRegistry
from router.models import ChatMessage, ChatRequest, Usage
from router.providers.base import CallSpec, ProviderReply, spec_from_request
from router.providers.http import HttpProvider
from router.ratelimit_headers import RateLimitInfo
from router.router import SmartModelRouter
from router.stats import StatsStore
from router.wire import wire_messages

REQUEST = ChatRequest(
    task="bench",
    messages=[ChatMessage(role="user", content="What does the corpus say?")],
    inputs={"q": "x"},
)


def registry() -> TaskHandlerRegistry:
    reg = TaskHandlerRegistry()
    reg.register("bench", lambda req: "builtin answer")
    return reg


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


# --- 1. overhead -------------------------------------------------------------------------------


class InstantProvider:
    """A provider that answers at once, in process: what remains is the router's own cost."""

    kind = "openai"
    has_health_probe = True

    def __init__(self, name: str) -> None:
        self.name = name
        self._reply = ProviderReply("instant answer", Usage(input_tokens=12, output_tokens=4))

    def key_problem(self) -> str | None:
        return None

    def structured_modes(self) -> dict[str, str]:
        return {}

    async def chat(self, spec: CallSpec, timeout_s: float) -> ProviderReply:
        return self._reply

    async def health(self, timeout_s: float) -> RateLimitInfo:
        return RateLimitInfo()


async def measure_overhead(
    providers: int, *, stats_dir: Path | None, subscriber: bool, n: int
) -> list[float]:
    config = load_router_config(
        {
            "providers": [
                {
                    "name": f"p{i}",
                    "kind": "openai",
                    "model": "m",
                    "api_key_env": None,
                    "rpm": 10**7,
                    "tpm": 10**9,
                }
                for i in range(providers)
            ]
        }
    )
    stats = StatsStore(stats_dir / "stats.sqlite3") if stats_dir is not None else None
    router = SmartModelRouter(
        config,
        providers={f"p{i}": InstantProvider(f"p{i}") for i in range(providers)},
        task_handlers=registry(),
        stats=stats,
        rng=random.Random(1),
    )
    if subscriber:
        router.subscribe(lambda snapshot: None)
    for _ in range(1000):
        await router.complete(REQUEST)
    samples = []
    clock = time.perf_counter
    for _ in range(n):
        began = clock()
        await router.complete(REQUEST)
        samples.append((clock() - began) * 1e6)
    await router.aclose()
    return samples


def bench_overhead() -> None:
    print("1. Router overhead per request, instant in-process provider (target <= 50 us p50)")
    print(f"   {'setup':<44} {'p50 us':>8} {'p99 us':>8} {'mean us':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("1 provider", 1, None, False),
            ("3 providers (health-weighted pick)", 3, None, False),
            ("1 provider + SQLite stats", 1, Path(tmp), False),
            ("1 provider + stats + 1 subscriber", 1, Path(tmp), True),
        ]
        for label, providers, stats_dir, subscriber in cases:
            samples = asyncio.run(
                measure_overhead(providers, stats_dir=stats_dir, subscriber=subscriber, n=20_000)
            )
            print(
                f"   {label:<44} {pct(samples, 50):8.1f} {pct(samples, 99):8.1f} {statistics.fmean(samples):8.1f}"
            )


# --- 2. recovery after a rate limit --------------------------------------------------------------------


async def recovery_time(
    server: FaultServer, retry_after: bool, step: float = 0.1
) -> tuple[float, int]:
    """Injected seconds from a 429 until the provider answers again; requests sent meanwhile, to it."""
    fault: dict[str, Any] = {"status": 429, "retry_after_s": 3} if retry_after else {"status": 429}
    server.set_script({"providers": {"openai": {"sequence": [fault]}}})
    server.clear_requests()
    clock = ManualClock()
    config = load_router_config(
        {
            "providers": [
                {
                    "name": "openai",
                    "kind": "openai",
                    "model": "m",
                    "api_key_env": None,
                    "base_url": server.url("openai") + "/v1",
                }
            ]
        }
    )
    router = build_router(
        config, stats_path=None, task_handlers=registry(), clock=clock, rng=random.Random(1)
    )
    first = await router.complete(REQUEST)
    assert first.attempts[0].error_class == "rate_limit"
    began = clock.monotonic()
    while True:
        clock.advance(step)
        for _ in range(3):
            await asyncio.sleep(0)
        if (await router.complete(REQUEST)).provider == "openai":
            break
    elapsed = clock.monotonic() - began
    sent = len(server.requests_for("openai", "chat"))
    await router.aclose()
    return elapsed, sent


async def run_recovery() -> None:
    async with FaultServer() as server:
        honoured, sent_h = await recovery_time(server, retry_after=True)
        flat, sent_f = await recovery_time(server, retry_after=False)
    print(
        "2. Recovery after a 429 (fault server over loopback, injected clock, a request every 0.1 s)"
    )
    print(
        f"   Retry-After: 3 honoured        traffic back after {honoured:7.1f} s   "
        f"(calls to the provider meanwhile: {sent_h - 2})"
    )
    print(
        f"   no Retry-After: probing        traffic back after {flat:7.1f} s   "
        f"(calls to the provider meanwhile: {sent_f - 2})"
    )
    print(
        "   (before the probing schedule a 429 without Retry-After kept the provider OPEN for a flat"
    )
    print("   120 s; now 120 s is only the ceiling and the first probe goes about a second in)")


# --- 3. goodput under chaos -------------------------------------------------------------------------------

SCALE = 0.25
SCRIPT_SECONDS = 60.0
RATE_PER_S = 40.0  # real requests per second: 10 per script second


def chaos_config(server: FaultServer, prefixes: list[str]) -> RouterConfig:
    return load_router_config(demo_router_config(server.base_url, prefixes, time_scale=SCALE))


async def drive(call: Any) -> tuple[list[tuple[str, float, int, int]], float]:
    """Open-loop arrivals for the scripted minute; each result is (answered by, latency, failed calls, calls)."""
    results: list[tuple[str, float, int, int]] = []

    async def one() -> None:
        began = time.perf_counter()
        provider, failed, calls = await call()
        results.append((provider, time.perf_counter() - began, failed, calls))

    tasks = []
    began = time.perf_counter()
    total = int(SCRIPT_SECONDS * SCALE * RATE_PER_S)
    for i in range(total):
        tasks.append(asyncio.ensure_future(one()))
        await asyncio.sleep(max(0.0, began + (i + 1) / RATE_PER_S - time.perf_counter()))
    await asyncio.gather(*tasks)
    return results, time.perf_counter() - began


async def chaos_router(
    server: FaultServer, config: RouterConfig
) -> tuple[list[tuple[str, float, int, int]], float]:
    router = build_router(config, stats_path=None, task_handlers=registry(), rng=random.Random(5))

    async def call() -> tuple[str, int, int]:
        response = await router.complete(REQUEST)
        failed = sum(1 for a in response.attempts if a.outcome in ("failed", "probe_failed"))
        calls = sum(
            1 for a in response.attempts if a.outcome != "skipped" and a.provider != "builtin"
        )
        return response.provider, failed, calls

    try:
        return await drive(call)
    finally:
        await router.aclose()


async def chaos_naive(
    server: FaultServer, config: RouterConfig
) -> tuple[list[tuple[str, float, int, int]], float]:
    """The pre-ADR-002 behaviour: fixed order, no breaker, no rate-limit awareness, builtin last."""
    client = _client(None)
    providers = [HttpProvider(cfg, client, ManualClock()) for cfg in config.providers]

    async def call() -> tuple[str, int, int]:
        failed = 0
        for provider in providers:
            spec = spec_from_request(REQUEST, provider.cfg.models[1], wire_messages(REQUEST), 512)
            try:
                await provider.chat(spec, provider.cfg.timeout_s)
                return provider.name, failed, failed + 1
            except ProviderCallError:
                failed += 1
        return "builtin", failed, failed

    try:
        return await drive(call)
    finally:
        await client.aclose()


def report(label: str, results: list[tuple[str, float, int, int]], wall: float) -> None:
    served = Counter(p for p, _, _, _ in results)
    remote = sum(n for p, n in served.items() if p != "builtin")
    wasted = sum(f for _, _, f, _ in results)
    calls = sum(c for _, _, _, c in results)
    latencies = [lat for _, lat, _, _ in results]
    print(
        f"   {label:<22} {len(results):>5} {remote:>7} {served['builtin']:>8} {calls:>6} {wasted:>7} "
        f"{pct(latencies, 50) * 1000:>8.0f} {pct(latencies, 95) * 1000:>8.0f} {wall:>7.1f}"
    )


async def run_chaos() -> None:
    script = load_fault_script(DEFAULT_SCRIPT_PATH)
    prefixes = sorted(script.providers)
    print(
        f"3. Goodput under chaos: shipped chaos.yaml, {len(prefixes)} providers, {SCRIPT_SECONDS:.0f} s of "
        f"scripted faults at time scale {SCALE} ({RATE_PER_S:.0f} requests/s real, open loop)"
    )
    print(
        f"   {'':<22} {'reqs':>5} {'remote':>7} {'builtin':>8} {'calls':>6} {'wasted':>7} "
        f"{'p50 ms':>8} {'p95 ms':>8} {'wall s':>7}"
    )
    for label, runner in (
        ("SmartModelRouter", chaos_router),
        ("naive fixed-order loop", chaos_naive),
    ):
        async with FaultServer(script=script, time_scale=SCALE) as server:
            config = chaos_config(server, prefixes)
            results, wall = await runner(server, config)
        report(label, results, wall)
    print(
        "   remote = answered by a remote provider; builtin = degraded answer from the built-in provider;"
    )
    print(
        "   calls = remote calls made (probes included); wasted = calls that failed (5xx, 429, timeouts, ...)"
    )


# --- 4. all providers down for 10 s ---------------------------------------------------------------------

ALL_DOWN = ["p1", "p2", "p3"]


def loopback_config(server: FaultServer, names: list[str]) -> RouterConfig:
    return load_router_config(
        {
            "providers": [
                {
                    "name": name,
                    "kind": "openai",
                    "model": "m",
                    "api_key_env": None,
                    "base_url": server.url(name) + "/v1",
                }
                for name in names
            ]
        }
    )


async def all_down_recovery(server: FaultServer, seed: int) -> tuple[float, int, float, int]:
    """(seconds to the first real answer after recovery, fallbacks after recovery,
    max probes per provider per second of outage, client-visible failures)."""
    server.set_script({"providers": {name: {"fault": "down"} for name in ALL_DOWN}})
    server.clear_requests()
    clock = ManualClock()
    router = build_router(
        loopback_config(server, ALL_DOWN),
        stats_path=None,
        task_handlers=registry(),
        clock=clock,
        rng=random.Random(seed),
    )
    began = clock.monotonic()
    failures = fallbacks = 0
    first_real = None
    while first_real is None and clock.monotonic() - began < 120:
        now = clock.monotonic() - began
        if now >= 10.0 and server.script.providers:
            server.set_script({"providers": {}})
        try:
            response = await router.complete(REQUEST)
        except Exception:
            failures += 1
        else:
            if response.provider != "builtin":
                first_real = now
            elif now >= 10.0:
                fallbacks += 1
        clock.advance(0.1)
        for _ in range(3):
            await asyncio.sleep(0)
    probes = max(len(server.requests_for(name, "health")) for name in ALL_DOWN)
    await router.aclose()
    return (first_real or 120.0) - 10.0, fallbacks, probes / 10.0, failures


async def run_all_down() -> None:
    print(
        "4. Every provider down for 10 s, then healthy (3 providers over loopback, injected clock, "
        "a request every 0.1 s; 5 seeds)"
    )
    print(
        f"   {'seed':>4} {'first real answer after recovery':>34} {'fallbacks after':>16} "
        f"{'probes/provider/s':>18} {'client failures':>16}"
    )
    async with FaultServer() as server:
        for seed in range(1, 6):
            delay, fallbacks, rate, failures = await all_down_recovery(server, seed)
            print(f"   {seed:>4} {delay:>32.1f} s {fallbacks:>16} {rate:>18.2f} {failures:>16}")


# --- 5. the typical outage: health up, chat failing ------------------------------------------------------


async def typical_outage() -> None:
    async with FaultServer() as server:
        server.set_script({"providers": {"p1": {"fault": {"status": 500}, "health": "ok"}}})
        clock = ManualClock()
        router = build_router(
            loopback_config(server, ["p1"]),
            stats_path=None,
            task_handlers=registry(),
            clock=clock,
            rng=random.Random(1),
        )
        while clock.monotonic() < 1_000 + 600:
            await router.complete(REQUEST)
            clock.advance(1.0)
            for _ in range(3):
                await asyncio.sleep(0)
        snap = router.snapshot()[0]
        chats = len(server.requests_for("p1", "chat"))
        health = len(server.requests_for("p1", "health"))
        await router.aclose()
    print(
        "5. Typical outage: health endpoint up, chat answering 500 for 600 s (a request a second)"
    )
    print(
        f"   state {snap.state.value}, trips {snap.consecutive_trips}, cooldown ceiling now "
        f"{getattr(snap, 'cooldown_ceiling_s', snap.cooldown_remaining_s):.0f} s, "
        f"chat calls sent {chats} (5 to trip, then one per probe), health checks {health}"
    )


def main() -> None:
    bench_overhead()
    print()
    asyncio.run(run_recovery())
    print()
    asyncio.run(run_chaos())
    print()
    asyncio.run(run_all_down())
    print()
    asyncio.run(typical_outage())


if __name__ == "__main__":
    main()
