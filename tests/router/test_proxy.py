"""A user behind a proxy reaches remote providers through it; loopback providers are never proxied.

The proxy is a real loopback forward proxy: it records the absolute-form request line
httpx sends it and relays the request to the fault server, which plays the provider.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest

from router.fault.server import FaultServer
from tests.router.conftest import (
    RouterFactory,
    Verdict,
    burst_of_210_held_at_200,
    fault_answer,
    make_config,
    provider_entry,
    request,
)


@dataclass
class ForwardProxy:
    """Relays each proxied request to ``upstream`` and remembers its request line."""

    upstream_port: int
    request_lines: list[str] = field(default_factory=list)
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *header_lines = head.rstrip("\r\n").split("\r\n")
        self.request_lines.append(request_line)
        method, target, version = request_line.split(" ")
        path = "/" + target.split("://", 1)[1].split("/", 1)[1]
        headers = [
            line for line in header_lines if not line.lower().startswith(("connection:", "proxy-"))
        ]
        length = next(
            (
                int(line.split(":", 1)[1])
                for line in headers
                if line.lower().startswith("content-length:")
            ),
            0,
        )
        body = await reader.readexactly(length)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        relayed_head = "".join(
            f"{line}\r\n" for line in [f"{method} {path} {version}", *headers, "Connection: close"]
        )
        up_writer.write(f"{relayed_head}\r\n".encode("latin-1") + body)
        await up_writer.drain()
        writer.write(await up_reader.read())
        await writer.drain()
        up_writer.close()
        writer.close()


@pytest.fixture
async def proxy(
    fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ForwardProxy]:
    """The proxy, named by ``HTTP_PROXY`` as the only proxy setting in the environment."""
    assert fault_server.port is not None
    forward = ForwardProxy(upstream_port=fault_server.port)
    server = await asyncio.start_server(forward.handle, "127.0.0.1", 0)
    forward.port = server.sockets[0].getsockname()[1]
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{forward.port}")
    yield forward
    server.close()
    await server.wait_closed()


async def test_remote_providers_go_through_the_proxy_and_loopback_does_not(
    fault_server: FaultServer,
    proxy: ForwardProxy,
    make_router: RouterFactory,
    keys: dict[str, str],
) -> None:
    remote = {
        **provider_entry(fault_server, "openai"),
        "base_url": "http://provider.test/openai/v1",
        "allow_insecure_http": True,  # the proxy under test speaks plain http
    }
    router = make_router(make_config([remote]))

    result = await router.complete(request())

    assert result.provider == "openai" and not result.degraded
    assert isinstance(result.parsed, Verdict) and result.parsed.verdict == "remote:verify"
    assert proxy.request_lines == ["POST http://provider.test/openai/v1/chat/completions HTTP/1.1"]

    local = make_router(make_config([provider_entry(fault_server, "ollama", kind="ollama")]))
    result = await local.complete(request())

    assert result.provider == "ollama" and not result.degraded
    assert len(proxy.request_lines) == 1


async def test_every_spelling_of_loopback_is_reached_directly(
    fault_server: FaultServer,
    proxy: ForwardProxy,
    make_router: RouterFactory,
    keys: dict[str, str],
) -> None:
    by_name = {
        **provider_entry(fault_server, "named", kind="ollama"),
        "base_url": f"http://localhost:{fault_server.port}/named/v1",
    }
    async with FaultServer(host="::1", responder=fault_answer) as six:
        router = make_router(
            make_config([by_name, provider_entry(six, "six", kind="ollama", weight=0.0)])
        )
        named = await router.complete(request())
        fault_server.set_script({"providers": {"named": {"fault": "down"}}})
        through_six = await router.complete(request())
    assert (named.provider, through_six.provider) == ("named", "six")
    assert proxy.request_lines == []


async def test_a_burst_through_the_proxy_opens_at_most_two_hundred_connections(
    fault_server: FaultServer,
    proxy: ForwardProxy,
    make_router: RouterFactory,
    keys: dict[str, str],
) -> None:
    """The proxied (remote) path has the loopback path's connection cap: of a burst of 210
    calls, 200 are in flight through the proxy at once and the other ten wait for a
    connection."""
    fault_server.set_script({"providers": {"wide": {"fault": "hold"}}})
    remote = {
        **provider_entry(fault_server, "wide", bulkhead=250, timeout_s=120.0),
        "base_url": "http://provider.test/wide/v1",
        "allow_insecure_http": True,
    }
    router = make_router(make_config([remote], max_attempts=1))
    responses = await burst_of_210_held_at_200(router, fault_server)
    assert all(r.provider == "wide" and not r.degraded for r in responses)
    assert len(proxy.request_lines) == 210
    assert fault_server.max_in_flight("wide") == 200


@pytest.mark.parametrize("own_transport", [False, True])
async def test_a_redirect_is_not_followed(
    own_transport: bool,
    fault_server: FaultServer,
    make_router: RouterFactory,
    keys: dict[str, str],
) -> None:
    """A provider URL that answers 307 to the fault server is a failed call: the router never
    sends a prompt (or a key) on to another address by itself."""

    async def redirect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        length = next(
            (
                int(v)
                for k, _, v in (h.partition(":") for h in head.split("\r\n"))
                if k.lower() == "content-length"
            ),
            0,
        )
        await reader.readexactly(length)
        target = f"{fault_server.url('openai')}/v1/chat/completions"
        writer.write(
            f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n".encode("latin-1")
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(redirect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        entry = {
            **provider_entry(fault_server, "openai"),
            "base_url": f"http://127.0.0.1:{port}/v1",
        }
        transport = httpx.AsyncHTTPTransport() if own_transport else None
        router = make_router(make_config([entry]), transport=transport)
        response = await router.complete(request())
    finally:
        server.close()
        await server.wait_closed()
    assert response.provider == "builtin"
    assert response.attempts[0].status == 307
    assert fault_server.requests == []
