"""The client side of ``make bench-peer``: one router, one scenario, records as JSON on stdout.

Runs in its own process so both routers are measured alike: ``--router ours`` in the project's
venv (SmartModelRouter), ``--router litellm`` in ``.venv-peer`` (LiteLLM's Router, which this
project never imports elsewhere). The loopback mock providers are the orchestrator's
(:mod:`tests.tools.bench_peer`); only the standard library and httpx are imported at the top.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

Call = Callable[[], Awaitable[str]]
"""One client request; returns "ok", "degraded" (the built-in fallback answered) or raises."""

MESSAGES = [{"role": "user", "content": "Say hello."}]


def ours(urls: list[str]) -> tuple[Call, Callable[[], Awaitable[None]]]:
    from router.build import build_router
    from router.config import load_router_config
    from router.local import TaskHandlerRegistry
    from router.models import ChatMessage, ChatRequest

    config = load_router_config(
        {
            "providers": [
                {
                    "name": f"d{i + 1}",
                    "kind": "openai",
                    "base_url": url,
                    "api_key_env": None,
                    "model": "fault-model",
                    "timeout_s": 10.0,
                }
                for i, url in enumerate(urls)
            ]
        },
        "bench-peer",
    )
    handlers = TaskHandlerRegistry()
    handlers.register("bench", lambda req: "built-in answer")
    router = build_router(config, stats_path=None, task_handlers=handlers)
    request = ChatRequest(
        task="bench", messages=[ChatMessage(role="user", content=MESSAGES[0]["content"])]
    )

    async def call() -> str:
        response = await router.complete(request)
        return "degraded" if response.provider == "builtin" else "ok"

    return call, router.aclose


def litellm(urls: list[str]) -> tuple[Call, Callable[[], Awaitable[None]]]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    import litellm as lite
    from litellm import Router

    lite.telemetry = False
    lite.suppress_debug_info = True
    router = Router(
        model_list=[
            {
                "model_name": "bench",
                "litellm_params": {
                    "model": "openai/fault-model",
                    "api_base": url,
                    "api_key": "unused",
                    "timeout": 10.0,
                },
            }
            for url in urls
        ],
        num_retries=2,
    )

    async def call() -> str:
        await router.acompletion(model="bench", messages=MESSAGES)
        return "ok"

    async def close() -> None:
        return None

    return call, close


async def raw_httpx(url: str, count: int) -> list[float]:
    body = {"model": "fault-model", "messages": MESSAGES}
    times = []
    async with httpx.AsyncClient() as client:
        for _ in range(count):
            began = time.perf_counter()
            response = await client.post(f"{url}/chat/completions", json=body)
            response.raise_for_status()
            times.append(time.perf_counter() - began)
    return times


async def overhead(call: Call, url: str, count: int) -> dict[str, Any]:
    for _ in range(30):  # warm both paths
        await call()
    await raw_httpx(url, 30)
    routed = []
    for _ in range(count):
        began = time.perf_counter()
        await call()
        routed.append(time.perf_counter() - began)
    return {"routed": routed, "raw": await raw_httpx(url, count)}


async def load(call: Call, clients: int, duration_s: float) -> dict[str, Any]:
    began = time.monotonic()
    records: list[tuple[float, float, str]] = []

    async def client() -> None:
        while time.monotonic() - began < duration_s:
            start = time.monotonic() - began
            try:
                outcome = await asyncio.wait_for(call(), timeout=30.0)
            except Exception:  # noqa: BLE001 - any error is a client-visible failure
                outcome = "failed"
            records.append((start, time.monotonic() - began, outcome))

    await asyncio.gather(*(client() for _ in range(clients)))
    return {"records": records}


async def main_async(options: argparse.Namespace) -> dict[str, Any]:
    build = ours if options.router == "ours" else litellm
    call, close = build(options.url)
    # start together with the mocks' timeline: the orchestrator restarts it on READY
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    sys.stdin.readline()
    try:
        if options.scenario == "overhead":
            return await overhead(call, options.url[0], options.count)
        return await load(call, options.clients, options.duration)
    finally:
        await close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--router", choices=["ours", "litellm"], required=True)
    parser.add_argument("--scenario", choices=["overhead", "load"], required=True)
    parser.add_argument("--url", action="append", required=True)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=30.0)
    options = parser.parse_args(argv)
    result = asyncio.run(main_async(options))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
