"""Shared fixtures for the router tests: an injected clock, a handler registry, the loopback fault server."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from router.build import build_router
from router.clock import ManualClock
from router.config import RouterConfig, load_router_config
from router.fault.server import FaultServer
from router.local import TaskHandlerRegistry
from router.models import ChatMessage, ChatRequest, ChatResponse
from router.router import SmartModelRouter

CANARY_KEYS = {
    "OPENAI_API_KEY": "sk-CANARY-openai-7f3a9c1d",
    "ANTHROPIC_API_KEY": "sk-ant-CANARY-anthropic-55e2b0",
    "GEMINI_API_KEY": "AIzaCANARY-gemini-91c4",
    "AZURE_OPENAI_API_KEY": "CANARY-azure-0d8e77",
    "GITHUB_TOKEN": "ghp_CANARYgithub4412",
}


class Verdict(BaseModel):
    verdict: str
    score: float


def builtin_answer(req: ChatRequest) -> dict[str, Any]:
    return {"verdict": f"builtin:{req.task}", "score": 0.1}


def fault_answer(task: str, inputs: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    return {"verdict": f"remote:{task}", "score": 0.9}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def registry() -> TaskHandlerRegistry:
    reg = TaskHandlerRegistry()
    reg.register("verify", builtin_answer)
    reg.register("chat", lambda req: "builtin says hi")
    return reg


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in CANARY_KEYS.items():
        monkeypatch.setenv(name, value)
    return dict(CANARY_KEYS)


@pytest.fixture
async def fault_server() -> AsyncIterator[FaultServer]:
    async with FaultServer(responder=fault_answer) as server:
        yield server


async def until(condition: Callable[[], bool], what: str, turns: int = 5000) -> None:
    """Let the loop (the fault server, worker threads) run until ``condition`` holds.

    For waiting on real I/O, never on time: it fails loudly when the condition never comes.
    """
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"never happened: {what}")


async def burst_of_210_held_at_200(
    router: SmartModelRouter, fault_server: FaultServer
) -> list[ChatResponse]:
    """Send 210 calls to a provider the fault server holds open: 200 are in flight at once (the
    client's connection cap), the other ten wait for a connection until the held ones finish."""
    calls = [asyncio.ensure_future(router.complete(request())) for _ in range(210)]
    await until(lambda: fault_server.held == 200, "two hundred answers held open", 20_000)
    for _ in range(50):
        await asyncio.sleep(0)
    assert fault_server.held == 200  # the other ten wait for a connection
    fault_server.release_held()
    return list(await asyncio.gather(*calls))


def request(
    task: str = "verify", *, schema: type[BaseModel] | None = Verdict, **kwargs: Any
) -> ChatRequest:
    return ChatRequest(
        task=task,
        messages=[ChatMessage(role="user", content="Is the claim supported?")],
        inputs={"claim": "water is wet"},
        response_schema=schema,
        **kwargs,
    )


def provider_entry(
    server: FaultServer, name: str, kind: str = "openai", **extra: Any
) -> dict[str, Any]:
    root = server.url(name)
    base = {"openai": f"{root}/v1", "ollama": f"{root}/v1", "github": f"{root}/inference"}.get(
        kind, root
    )
    entry: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "base_url": base,
        "model": f"{name}-model",
        "timeout_s": 5.0,
    }
    entry.update(extra)
    return entry


def make_config(providers: list[dict[str, Any]], **policy: Any) -> RouterConfig:
    return load_router_config({"providers": providers, "policy": policy}, "test")


RouterFactory = Callable[..., SmartModelRouter]


@pytest.fixture
async def make_router(
    clock: ManualClock, registry: TaskHandlerRegistry
) -> AsyncIterator[RouterFactory]:
    routers: list[SmartModelRouter] = []

    def factory(config: RouterConfig, *, seed: int = 7, **kwargs: Any) -> SmartModelRouter:
        kwargs.setdefault("stats_path", None)
        kwargs.setdefault("task_handlers", registry)
        kwargs.setdefault("clock", clock)
        router = build_router(config, rng=random.Random(seed), **kwargs)
        routers.append(router)
        return router

    yield factory
    for router in routers:
        await router.aclose()


@pytest.fixture(params=["sqlite", "postgres"])
def shared_stats(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Where two routers share their stats: the SQLite file, or the PostgreSQL database that
    every worker shares (build_router's arguments)."""
    if request.param == "sqlite":
        return {"stats_path": tmp_path / "provider_stats.sqlite3"}
    return {"stats_path": tmp_path, "stats_database": request.getfixturevalue("pg_database")}
