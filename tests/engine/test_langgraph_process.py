"""Runs that outlive their process: an interrupt answered by a new process, and kill -9.

Real subprocesses (tests/engine/langgraph_worker.py), a real SQLite run store
and checkpoint file in tmp_path. The worker's steps count every model call that
really happens in a file, so "the call happened exactly once" is checked across
processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine.events import InterruptRaised, InterruptResolved, StepStarted
from engine.states import RunStatus, StepStatus
from engine.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


def worker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.engine.langgraph_worker", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def calls(counter: Path) -> Counter[str]:
    return Counter(counter.read_text().split()) if counter.exists() else Counter()


@pytest.mark.parametrize("engine", ["kahn", "langgraph"])
def test_interrupt_round_trip_across_processes(tmp_path: Path, engine: str) -> None:
    db, counter, run_id = tmp_path / "runs.sqlite", tmp_path / "calls.txt", f"rt-{engine}"
    first = worker("run", str(db), engine, "interrupt", str(counter), run_id)
    assert first.returncode == 4, first.stderr
    assert json.loads(first.stdout.splitlines()[-1])["status"] == "WAITING"
    with RunStore(db) as store:
        pending = store.pending_interrupts(run_id)
        assert [p.step_id for p in pending] == ["ask"]
        assert store.get_run(run_id).status == RunStatus.WAITING
    if engine == "langgraph":
        assert (tmp_path / "checkpoints.sqlite").exists()

    second = worker("resume", str(db), engine, run_id, str(counter), "reject")
    assert second.returncode == 0, second.stderr
    with RunStore(db) as store:
        record = store.get_run(run_id)
        events = store.events(run_id)
        results = store.step_results(run_id)
    assert record.status == RunStatus.COMPLETED
    assert record.outputs == {"answer": "reject", "model": "model answer for ask"}
    assert calls(counter) == Counter({"ask": 1, "side": 1}), "a model call was repeated"
    assert [e.step_id for e in events if isinstance(e, InterruptRaised)] == ["ask"]
    assert [e.answer["action"] for e in events if isinstance(e, InterruptResolved)] == ["reject"]
    assert results["after"].status == StepStatus.SUCCEEDED
    started = Counter(e.step_id for e in events if isinstance(e, StepStarted))
    assert started["side"] == 1 and started["after"] == 1


def test_kill_9_during_a_langgraph_run_then_resume(tmp_path: Path) -> None:
    db, counter, run_id = tmp_path / "runs.sqlite", tmp_path / "calls.txt", "crash-langgraph"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.engine.langgraph_worker",
            "run",
            str(db),
            "langgraph",
            "crash",
            str(counter),
            run_id,
        ],
        cwd=ROOT,
        env={**os.environ, "LG_BLOCK": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_until_blocked(db, run_id, counter, process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    resumed = worker("resume", str(db), "langgraph", run_id, str(counter))
    assert resumed.returncode == 0, resumed.stderr
    with RunStore(db) as store:
        events = store.events(run_id)
        results = store.step_results(run_id)
        record = store.get_run(run_id)
    assert record.status == RunStatus.COMPLETED
    assert all(result.status == StepStatus.SUCCEEDED for result in results.values())
    started = Counter(e.step_id for e in events if isinstance(e, StepStarted))
    assert started["first"] == 1 and started["fast"] == 1, f"a finished step ran again: {started}"
    assert started["slow"] == 2 and started["join"] == 1
    assert calls(counter) == Counter({"first": 1, "fast": 1, "slow": 1, "join": 1}), (
        "a journaled call was repeated"
    )
    assert results["slow"].outputs == {"model": "model answer for slow"}


def _wait_until_blocked(
    db: Path, run_id: str, counter: Path, process: subprocess.Popen[str]
) -> None:
    """Until ``fast`` has finished and ``slow`` has made its call (and now blocks)."""
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"the worker exited early: {process.stderr.read() if process.stderr else ''}"
            )
        if db.exists() and calls(counter)["slow"] == 1:
            with RunStore(db) as store:
                fast = store.step_results(run_id).get("fast")
            if fast is not None and fast.status == StepStatus.SUCCEEDED:
                return
        time.sleep(0.05)
    raise AssertionError("the worker never reached the blocking step")


def test_cli_resumes_a_waiting_langgraph_run_in_a_new_process(tmp_path: Path) -> None:
    def workbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tui.cli", "--workspace", str(tmp_path), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "200"},
        )

    first = workbench(
        "run",
        str(ROOT / "workflows" / "approval.yaml"),
        "--engine",
        "langgraph",
        "--headless",
        "--on-interrupt",
        "wait",
    )
    assert first.returncode == 4, first.stdout + first.stderr
    with RunStore(tmp_path / "runs.sqlite") as store:
        (run,) = store.list_runs()
    assert run.engine == "langgraph" and run.status == RunStatus.WAITING

    second = workbench("resume", run.run_id, "--answer", '{"steps": 7}')
    assert second.returncode == 0, second.stdout + second.stderr
    with RunStore(tmp_path / "runs.sqlite") as store:
        results = store.step_results(run.run_id)
        events = store.events(run.run_id)
    assert results["plan"].outputs["steps"] == 7
    assert results["execute"].status == StepStatus.SUCCEEDED
    assert [e.answer["action"] for e in events if isinstance(e, InterruptResolved)] == ["edit"]
