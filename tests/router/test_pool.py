"""The router's HTTP client: at most 200 connections at once, the rest of a burst waits for one;
no connection is dialled again by the transport. Real loopback calls (held open by the fault
server until the test lets them finish)."""

from __future__ import annotations

import asyncio

from router.fault.server import FaultServer

from .conftest import RouterFactory, burst_of_210_held_at_200, make_config, provider_entry, request


async def test_a_burst_opens_at_most_two_hundred_connections(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"wide": {"fault": "hold"}}})
    router = make_router(
        make_config(
            [provider_entry(fault_server, "wide", bulkhead=250, timeout_s=120.0)], max_attempts=1
        )
    )
    responses = await burst_of_210_held_at_200(router, fault_server)
    assert all(r.provider == "wide" for r in responses)
    assert fault_server.max_in_flight("wide") == 200


async def test_a_loopback_connection_that_fails_to_open_is_dialled_once(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict[str, str]
) -> None:
    """The router makes no transport-level retries: a loopback provider whose connection fails
    while it is being opened (here its TLS handshake meets a closed socket) is dialled once per
    attempt, and the failure is the attempt's."""
    accepted = 0

    async def close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        writer.close()

    server = await asyncio.start_server(close_at_once, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        entry = {
            **provider_entry(fault_server, "closed"),
            "base_url": f"https://127.0.0.1:{port}/v1",
        }
        router = make_router(make_config([entry], max_attempts=1))
        response = await router.complete(request())
    finally:
        server.close()
        await server.wait_closed()
    assert [(a.provider, a.outcome, a.error_class) for a in response.attempts] == [
        ("closed", "failed", "connection"),
        ("builtin", "ok", None),
    ]
    assert accepted == 1
