"""The router's HTTP client: at most 200 connections at once, the rest of a burst waits for one.
Real loopback calls held open by the fault server until the test lets them finish."""

from __future__ import annotations

import asyncio

from router.fault_server import FaultServer

from .conftest import RouterFactory, make_config, provider_entry, request, until


async def test_a_burst_opens_at_most_two_hundred_connections(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"wide": {"fault": "hold"}}})
    router = make_router(
        make_config(
            [provider_entry(fault_server, "wide", bulkhead=250, timeout_s=120.0)], max_attempts=1
        )
    )
    calls = [asyncio.ensure_future(router.complete(request())) for _ in range(210)]
    await until(lambda: fault_server.held == 200, "two hundred answers held open", 20_000)
    for _ in range(50):
        await asyncio.sleep(0)
    assert fault_server.held == 200  # the other ten wait for a connection
    fault_server.release_held()
    responses = await asyncio.gather(*calls)
    assert all(r.provider == "wide" for r in responses)
    assert fault_server.max_in_flight("wide") == 200
