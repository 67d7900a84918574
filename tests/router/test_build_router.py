"""``build_router``'s own arguments reach what they configure: the environment the keys are read
from, and the random source every random choice draws from; a closed router stays closed.
Real loopback calls."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import pytest

from router.build import build_router
from router.clock import ManualClock
from router.errors import RouterClosedError
from router.fault.server import FaultServer
from router.local import TaskHandlerRegistry
from router.providers.http import HttpProvider
from router.router import SmartModelRouter

from .conftest import make_config, provider_entry, request, until


async def test_keys_are_read_from_the_environment_given(
    fault_server: FaultServer, registry: TaskHandlerRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    router = build_router(
        make_config([provider_entry(fault_server, "openai")]),
        stats_path=None,
        task_handlers=registry,
        environ={"OPENAI_API_KEY": "sk-given"},
    )
    try:
        assert (await router.complete(request())).provider == "openai"
    finally:
        await router.aclose()
    assert fault_server.requests_for("openai", "chat")[0].headers["authorization"] == (
        "Bearer sk-given"
    )


async def test_the_same_seed_makes_the_same_choices(
    fault_server: FaultServer, registry: TaskHandlerRegistry, keys: dict
) -> None:
    config = make_config([provider_entry(fault_server, n) for n in ("a", "b", "c")])

    async def choices(seed: int) -> list[str]:
        router = build_router(
            config,
            stats_path=None,
            task_handlers=registry,
            clock=ManualClock(),  # latencies of 0: only the random source decides
            rng=random.Random(seed),
        )
        try:
            return [(await router.complete(request())).provider for _ in range(24)]
        finally:
            await router.aclose()

    first = await choices(11)
    assert len(set(first)) > 1  # the choice is random, spread over the providers ...
    assert await choices(11) == first  # ... and drawn from the random source given


async def test_a_closed_router_refuses_requests_and_closes_once(
    fault_server: FaultServer, registry: TaskHandlerRegistry, keys: dict, tmp_path: Path
) -> None:
    router = build_router(
        make_config([provider_entry(fault_server, "openai")]),
        stats_path=tmp_path / "stats.sqlite3",
        task_handlers=registry,
        clock=ManualClock(),
    )
    assert (await router.complete(request())).provider == "openai"
    await router.aclose()
    await router.aclose()  # a second close does nothing
    with pytest.raises(RouterClosedError):
        await router.complete(request())
    assert len(fault_server.requests_for("openai", "chat")) == 1


async def test_closing_the_router_closes_the_client_it_was_given(
    fault_server: FaultServer, registry: TaskHandlerRegistry, keys: dict
) -> None:
    config = make_config([provider_entry(fault_server, "openai")])
    client = httpx.AsyncClient()
    router = SmartModelRouter(
        config,
        providers={"openai": HttpProvider(config.providers[0], client, ManualClock())},
        task_handlers=registry,
        clock=ManualClock(),
        client=client,
    )
    assert (await router.complete(request())).provider == "openai"
    await router.aclose()
    assert client.is_closed


async def test_closing_a_built_router_closes_its_connections(
    fault_server: FaultServer, registry: TaskHandlerRegistry, keys: dict[str, str]
) -> None:
    router = build_router(
        make_config([provider_entry(fault_server, "openai")]),
        stats_path=None,
        task_handlers=registry,
        clock=ManualClock(),
    )
    assert (await router.complete(request())).provider == "openai"
    assert fault_server.open_connections == 1  # kept alive for the next call
    await router.aclose()
    await until(lambda: fault_server.open_connections == 0, "the router's connection closed")
