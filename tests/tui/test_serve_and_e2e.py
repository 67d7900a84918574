"""The real `workbench` process: served over loopback HTTP, and driven in a pseudo-terminal."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import httpx
import pytest

from engine.events import InterruptResolved
from engine.states import RunStatus
from engine.store import RunStore
from tests.tui.terminal import E2E_TIMEOUT_S, ENTER, F2, WORKBENCH, spawn_workbench, terminal_env

CTRL_S = "\x13"
"""Ctrl+S as a terminal sends it: Home starts the run from any field."""

STARTUP_S = 120.0
"""How long the server may take to start or stop on a loaded machine before the test fails."""
SERVE_TOKEN = "test-token-of-the-served-app"
"""$WORKBENCH_TOKEN of the servers these tests start (tests/security/test_serve_auth.py: why)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def served(tmp_path: Path, *options: str) -> Iterator[int]:
    """`workbench serve` on a free loopback port (its token :data:`SERVE_TOKEN`), with
    $WORKBENCH_CONFIG naming a file that does not exist yet; yields the port once the page
    answers."""
    port = free_port()
    env = {
        **os.environ,
        "WORKBENCH_HOME": str(tmp_path),
        "WORKBENCH_CONFIG": str(tmp_path / "config.yaml"),
        "WORKBENCH_TOKEN": SERVE_TOKEN,
    }
    process = subprocess.Popen(
        [WORKBENCH, "serve", "--port", str(port), *options],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=10.0)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "workbench serve never answered"
                time.sleep(0.1)  # refused at once while the server starts: ask again shortly
        yield port
    finally:
        process.terminate()
        process.wait(timeout=STARTUP_S)


def test_serve_answers_with_the_app_page(tmp_path: Path) -> None:
    with served(tmp_path) as port:
        page = httpx.get(
            f"http://127.0.0.1:{port}/?token={SERVE_TOKEN}", timeout=10.0, follow_redirects=True
        )
        assert page.status_code == 200
        assert "Research Workbench" in page.text
        assert "textual" in page.text.lower()


async def test_served_app_starts_on_defaults_when_the_config_file_does_not_exist_yet(
    tmp_path: Path,
) -> None:
    """What a browser does: open the page's websocket and read the app's frames until Home shows."""
    with served(tmp_path) as port:
        shown = b""
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(
                f"http://127.0.0.1:{port}/ws?width=120&height=40&token={SERVE_TOKEN}",
                timeout=aiohttp.ClientWSTimeout(ws_receive=STARTUP_S),
            ) as websocket:
                async for message in websocket:
                    if message.type == aiohttp.WSMsgType.BINARY:
                        shown += message.data
                    if b"Workflows" in shown:
                        break
        assert b"Workflows" in shown, f"the served app never showed Home: {shown[-400:]!r}"
        assert b"no such config file" not in shown


@pytest.mark.slow
@pytest.mark.timeout(E2E_TIMEOUT_S)
def test_full_offline_research_run_with_one_approval(tmp_path: Path) -> None:
    term = spawn_workbench([], terminal_env(tmp_path, WORKBENCH_HOME=str(tmp_path)))
    try:
        term.choose_workflow("deep_research")
        term.press(ENTER, lambda: term.focused_field() == "query", "the query field focused")
        term.type("How does asyncio schedule tasks?")
        # Ctrl+S starts the run from any field (the rest keep their defaults)
        term.press(CTRL_S, lambda: not term.on_home(), "the run starting")
        term.wait_for("Approve the research plan")
        term.press(F2, lambda: "COMPLETED" in term.text(), "the run completing")
        term.quit()
    finally:
        term.close()
    store = RunStore(tmp_path / "runs.sqlite")
    [run] = store.list_runs()
    assert run.status is RunStatus.COMPLETED
    answers = [e for e in store.events(run.run_id) if isinstance(e, InterruptResolved)]
    assert [a.answer["action"] for a in answers] == ["approve"] and not answers[0].automatic
    assert (tmp_path / "runs" / run.run_id / "report.md").is_file()
    store.close()
