"""The real `workbench` process: served over loopback HTTP, and driven in a pseudo-terminal."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from engine.events import InterruptResolved
from engine.states import RunStatus
from engine.store import RunStore
from tests.tui.terminal import DOWN, ENTER, F2, WORKBENCH, spawn_workbench, terminal_env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_answers_with_the_app_page(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "WORKBENCH_HOME": str(tmp_path),
        "WORKBENCH_CONFIG": str(tmp_path / "config.yaml"),
    }
    process = subprocess.Popen(
        [WORKBENCH, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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


@pytest.mark.slow
def test_full_offline_research_run_with_one_approval(tmp_path: Path) -> None:
    term = spawn_workbench([], terminal_env(tmp_path, WORKBENCH_HOME=str(tmp_path)))
    child = term.child
    try:
        term.wait_for("Workflows")
        term.wait_for("deep_research")
        for _ in range(40):
            term.pump()
            if "New run · deep_research" in term.text():
                break
            child.send(DOWN)
        term.wait_for("New run · deep_research")
        child.send(ENTER)
        term.wait_for("query")
        child.send("How does asyncio schedule tasks?")
        child.send(ENTER)
        for _ in range(8):
            term.pump()
            child.send(ENTER)
            if "Approve" in term.text():
                break
        term.wait_for("Approve the research plan")
        child.send(F2)
        term.wait_for("COMPLETED")
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
