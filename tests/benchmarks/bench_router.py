"""Router benchmarks (`make bench`): overhead, recovery after a rate limit, goodput under chaos.

Figures are printed side by side; nothing here asserts a time.

1. Overhead per request of ``SmartModelRouter.complete`` against an instant in-process
   provider (target: <= 50 us p50), bare and with stats persistence and a subscriber.
2. Recovery after a 429: injected time until traffic returns to the provider when the
   router honours ``Retry-After: 3`` versus a flat 120 s rate-limit cooldown (ADR-002
   claims 40x), measured against the real fault server over loopback.
3. Goodput in a chaos scenario: the shipped chaos script on the fault server (six
   providers, 60 s of scripted faults played at time scale 0.25 with the router's
   policy scaled alike), the router versus a naive fixed-order fallback loop with
   no breakers: requests answered remotely, wasted calls to failing providers, p95.
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

from router.clock import ManualClock
from router.config import RouterConfig, load_router_config
from router.errors import ProviderCallError
from router.fault_script import DEFAULT_SCRIPT_PATH, load_fault_script
from router.fault_server import FaultServer, demo_router_config
from router.local import TaskHandlerRegistry
from router.models import ChatMessage, ChatRequest, Usage
from router.providers.base import CallSpec, ProviderReply, spec_from_request
from router.providers.http import HttpProvider
from router.ratelimit_headers import RateLimitInfo
from router.router import SmartModelRouter, _client, build_router
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
        f"   no Retry-After: flat cooldown  traffic back after {flat:7.1f} s   "
        f"(calls to the provider meanwhile: {sent_f - 2})"
    )
    print(
        f"   faster recovery: {flat / honoured:.0f}x (ADR-002 claims 40x for a 3 s Retry-After vs 120 s)"
    )


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


def main() -> None:
    bench_overhead()
    print()
    asyncio.run(run_recovery())
    print()
    asyncio.run(run_chaos())


if __name__ == "__main__":
    main()
