"""An advisory run killed with SIGKILL mid-agent resumes without repeating a journaled call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from engine.kahn import KahnEngine
from engine.states import RunStatus
from engine.store import RunStore
from tests.agents import agent_crash_worker
from tests.agents.agent_helpers import domain
from tests.engine.test_resume import _wait_for

REPO = Path(__file__).resolve().parents[2]


async def test_advisory_resume_after_sigkill_repeats_no_journaled_call(tmp_path: Path) -> None:
    db, run_id = tmp_path / "runs.sqlite", "advisory-crash"
    tools, models = tmp_path / "tools.txt", tmp_path / "models.txt"
    tools.touch()
    models.touch()
    blocked = tools.with_suffix(".blocked")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.agents.agent_crash_worker",
            str(db),
            run_id,
            str(tools),
            str(models),
        ],
        cwd=REPO,
        env={**os.environ, "AGENT_CRASH_BLOCK": "2"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(blocked.exists, "the third tool call", process)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    calls_before = models.read_text().splitlines()
    assert len(tools.read_text().splitlines()) == 2
    assert len(calls_before) >= 3, "killed mid-agent, after several decisions and thoughts"

    steps, _ = agent_crash_worker.setup()
    store = RunStore(db)
    result = await KahnEngine(registry=steps).resume(
        run_id, agent_crash_worker.context(store, run_id, str(tools), str(models))
    )
    events = store.events(run_id)
    store.close()

    assert result.status == RunStatus.COMPLETED
    calls = models.read_text().splitlines()
    assert calls[: len(calls_before)] == calls_before
    assert len(calls) == len(set(calls)), f"a model call was made twice: {calls}"
    tool_lines = tools.read_text().splitlines()
    assert len(tool_lines) == len(set(tool_lines)), f"a tool ran twice: {tool_lines}"
    thoughts = domain(events, "agent.thought")
    react_calls = [c for c in calls if c.startswith("agent.react")]
    assert len(thoughts) == len(react_calls), "each thought is in the trail once"
    assert len(domain(events, "advisory.decision")) == len(
        [c for c in calls if c.startswith("agent.orchestrate")]
    )
    finished = next(e for e in events if e.kind == "step_finished" and e.step_id == "orchestrator")
    assert finished.outputs["agents_executed"] == ["alpha", "gamma", "beta"]
    assert finished.replayed_calls >= len(calls_before)
