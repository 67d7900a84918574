"""`workbench serve` lets in only who was given its address: a real `workbench serve` process on
loopback, spoken to over real HTTP and WebSockets (aiohttp) as a browser — or another site's
page, or one tab too many — would.

It used to accept any WebSocket (``Origin: http://evil.example`` included), draw Home for it
and, after Ctrl+Y, the history with every stored question; ten connections started ten app
processes (722 MB).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import aiohttp
import pytest

from tests.tui.terminal import WORKBENCH
from tests.tui.test_serve_and_e2e import SERVE_TOKEN, STARTUP_S, free_port, served
from tui.commands.served_app import TRY_AGAIN_LATER, GuardedServer, announcement

pytestmark = pytest.mark.timeout(600)


def jar() -> aiohttp.CookieJar:
    """A cookie jar that keeps cookies of an IP address (127.0.0.1), as a browser does."""
    return aiohttp.CookieJar(unsafe=True)


async def read_until(socket: aiohttp.ClientWebSocketResponse, words: bytes) -> bytes:
    """What the app writes to the page's terminal, until ``words`` show (or the socket closes)."""
    shown = b""
    async for message in socket:
        if message.type == aiohttp.WSMsgType.BINARY:
            shown += message.data
            if words in shown:
                break
    return shown


async def test_the_page_and_its_websocket_need_the_token(tmp_path: Path) -> None:
    with served(tmp_path) as port:
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession(cookie_jar=jar()) as session:
            for url in (f"{base}/", f"{base}/?token=wrong-token-of-the-served"):
                async with session.get(url, allow_redirects=False) as page:
                    assert page.status == 401, url
                    assert "open the address `workbench serve` printed" in await page.text()
            for ws in (f"{base}/ws", f"{base}/ws?token=wrong-token-of-the-served"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await session.ws_connect(ws)
                assert refused.value.status == 401, ws
            async with session.get(f"{base}/?token={SERVE_TOKEN}", allow_redirects=False) as page:
                assert (page.status, page.headers["Location"]) == (303, "/")
                cookie = page.cookies["workbench_token"]
                assert cookie["httponly"] and cookie["samesite"] == "Strict"
            async with session.get(f"{base}/") as page:
                assert page.status == 200 and "Research Workbench" in await page.text()


async def test_a_websocket_opened_by_another_site_is_refused(tmp_path: Path) -> None:
    with served(tmp_path) as port:
        url = f"http://127.0.0.1:{port}/ws?token={SERVE_TOKEN}"
        async with aiohttp.ClientSession() as session:
            for origin in (
                "http://evil.example",
                f"http://127.0.0.1.evil.example:{port}",
                f"http://127.0.0.1:{port + 1}",
                f"https://127.0.0.1:{port}",
                "null",
            ):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await session.ws_connect(url, origin=origin)
                assert refused.value.status == 403, origin


async def test_the_right_origin_and_token_open_the_app_and_sessions_are_capped(
    tmp_path: Path,
) -> None:
    with served(tmp_path, "--max-sessions", "1") as port:
        url = f"http://127.0.0.1:{port}/ws?width=120&height=40&token={SERVE_TOKEN}"
        timeout = aiohttp.ClientWSTimeout(ws_receive=STARTUP_S)
        async with aiohttp.ClientSession() as session:
            first = await session.ws_connect(
                url, origin=f"http://localhost:{port}", timeout=timeout
            )
            assert b"Workflows" in await read_until(first, b"Workflows"), "Home never showed"
            second = await session.ws_connect(
                url, origin=f"http://127.0.0.1:{port}", timeout=timeout
            )
            told = await read_until(second, b"reload this page")
            assert b"1 session is open already" in told
            assert second.closed or (await second.receive()).type == aiohttp.WSMsgType.CLOSE
            assert second.close_code == TRY_AGAIN_LATER
            await first.close()
            # the place frees once the first session's app has ended: ask until it has (the
            # test's timeout bounds the wait; each refusal says so before it closes)
            while True:
                third = await session.ws_connect(url, timeout=timeout)
                shown = await read_until(third, b"Workflows")
                if b"Workflows" in shown:
                    break
                assert b"1 session is open already" in shown, shown
                await asyncio.sleep(0.2)  # the first app is still stopping: ask again shortly
            await third.close()


def test_a_token_is_made_and_printed_when_none_is_given(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "WORKBENCH_HOME": str(tmp_path)}
    env.pop("WORKBENCH_TOKEN", None)
    with subprocess.Popen(
        [WORKBENCH, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
        finally:
            process.terminate()
            process.wait(timeout=STARTUP_S)
    prefix = f"Research Workbench served at http://127.0.0.1:{port}/?token="
    assert first.startswith(prefix)
    assert len(first.strip()) - len(prefix) >= 40


def test_a_short_token_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [WORKBENCH, "serve", "--port", str(free_port())],
        env={**os.environ, "WORKBENCH_HOME": str(tmp_path), "WORKBENCH_TOKEN": "secret"},
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "error: $WORKBENCH_TOKEN is 6 characters; use at least 16 random ones (or unset it and"
        " a token is made for this server)\n",
    )


@pytest.mark.parametrize(
    "host, public_url, warned",
    [
        ("127.0.0.1", None, False),
        ("localhost", None, False),
        ("0.0.0.0", None, True),
        ("192.0.2.7", "https://workbench.example.org", True),
    ],
)
def test_serving_beyond_loopback_is_said_in_one_line(
    host: str, public_url: str | None, warned: bool
) -> None:
    """The lines `serve` starts with (binding a public interface in a test would expose it)."""
    server = GuardedServer(
        "app", token="t" * 20, max_sessions=4, host=host, port=8000, public_url=public_url
    )
    lines = announcement(server, host, token_from_env=True)
    assert lines[0] == (
        f"Research Workbench served at {public_url or f'http://{host}:8000'}"
        "/?token=$WORKBENCH_TOKEN",
        False,
    )
    warnings = [line for line, to_stderr in lines if to_stderr]
    assert warnings == (
        [
            f"warning: listening on {host}, beyond this machine: anyone who reaches port 8000"
            " with the token drives the workbench, in clear unless a TLS proxy is in front"
        ]
        if warned
        else []
    )
    if public_url:
        assert ("https", "workbench.example.org", 443) in server.origins
        assert len(server.origins) == 1
