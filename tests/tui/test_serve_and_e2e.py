"""The real `workbench` process: served over loopback HTTP, and driven in a pseudo-terminal."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pexpect
import pyte
import pytest

from engine.events import InterruptResolved
from engine.states import RunStatus
from engine.store import RunStore

WORKBENCH = str(Path(sys.executable).parent / "workbench")
COLUMNS, ROWS = 160, 48


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_answers_with_the_app_page(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "WORKBENCH_HOME": str(tmp_path), "WORKBENCH_CONFIG": str(tmp_path / "config.yaml")}
    process = subprocess.Popen([WORKBENCH, "serve", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        page = None
        for _ in range(200):
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=2.0)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert page is not None, "workbench serve never answered"
        assert page.status_code == 200
        assert "Research Workbench" in page.text
        assert "textual" in page.text.lower()
    finally:
        process.terminate()
        process.wait(timeout=10)


class Terminal:
    """A pexpect child rendered by pyte, so assertions read the screen a person sees."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)

    def pump(self) -> None:
        try:
            while True:
                self.stream.feed(self.child.read_nonblocking(65536, timeout=0.05))
        except (pexpect.TIMEOUT, pexpect.EOF):
            return

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait_for(self, words: str, rounds: int = 1200) -> None:
        for _ in range(rounds):
            self.pump()
            if words in self.text():
                return
        raise AssertionError(f"{words!r} never appeared on screen:\n{self.text()}")


@pytest.mark.slow
def test_full_offline_research_run_with_one_approval(tmp_path: Path) -> None:
    env = {**os.environ, "WORKBENCH_HOME": str(tmp_path), "WORKBENCH_CONFIG": str(tmp_path / "config.yaml"),
           "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
    for key in [k for k in env if k.endswith("_API_KEY") or k.startswith(("OPENAI", "ANTHROPIC", "GEMINI"))]:
        env.pop(key)
    child = pexpect.spawn(WORKBENCH, [], env=env, dimensions=(ROWS, COLUMNS))
    term = Terminal(child)
    try:
        term.wait_for("Workflows")
        term.wait_for("deep_research")
        for _ in range(40):
            term.pump()
            if "New run · deep_research" in term.text():
                break
            child.send("\x1b[B")
        term.wait_for("New run · deep_research")
        child.send("\r")
        term.wait_for("query")
        child.send("How does asyncio schedule tasks?")
        child.send("\r")
        for _ in range(8):
            term.pump()
            child.send("\r")
            if "Approve" in term.text():
                break
        term.wait_for("Approve the research plan")
        child.send("\x1bOQ")
        term.wait_for("COMPLETED")
        child.sendcontrol("q")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        if child.isalive():
            child.terminate(force=True)
    store = RunStore(tmp_path / "runs.sqlite")
    [run] = store.list_runs()
    assert run.status is RunStatus.COMPLETED
    answers = [e for e in store.events(run.run_id) if isinstance(e, InterruptResolved)]
    assert [a.answer["action"] for a in answers] == ["approve"] and not answers[0].automatic
    assert (tmp_path / "runs" / run.run_id / "report.md").is_file()
    store.close()
