"""Fixtures of the TUI tests: a real run store file with scripted runs, a frozen clock."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from engine.states import RunStatus
from engine.store import RunStore
from tests.tools.sample_run import research_events, store_events, tie_break_events
from tui.launch.workbench import Workbench

FROZEN_WALL = 1_700_000_000.0

os.environ["TZ"] = "UTC"
time.tzset()  # the event log shows local times: snapshots must not depend on the machine's zone


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """Scripted runs, every stored event and run stamped with the same wall and monotonic time."""
    store = RunStore(tmp_path / "runs.sqlite", clock=lambda: FROZEN_WALL, monotonic=lambda: 100.0)
    store_events(store, "run-done", research_events("run-done"))
    store_events(
        store,
        "run-mid",
        research_events("run-mid", upto_round=2, finished=False),
        status=RunStatus.RUNNING,
    )
    store_events(
        store,
        "run-ask",
        research_events("run-ask", approval_pending=True),
        status=RunStatus.WAITING,
    )
    store_events(store, "run-tie", tie_break_events("run-tie"), status=RunStatus.WAITING)
    store.close()
    folder = tmp_path / "runs" / "run-done"
    folder.mkdir(parents=True)
    (folder / "report.md").write_text(
        "# How asyncio schedules tasks\n\nThe event loop keeps a **ready queue** of callbacks; a task's "
        "`__step` runs until its coroutine awaits a future.\n\n## Findings\n\n- Tasks are scheduled with "
        "`call_soon` [S1]\n- `await` on a pending future suspends the task [S2]\n",
        encoding="utf-8",
    )
    (folder / "quality.yaml").write_text(
        "confidence_level: full\nbest_ci: 0.85\nselected_round: 3\nrounds_completed: 3\n"
        "failing_metrics: []\npassing_metrics: [coverage, source_quality, agreement, verification, recency]\n"
        "stop_reason: gate passed at R3\n",
        encoding="utf-8",
    )
    (tmp_path / "shipped").mkdir()
    (tmp_path / "shipped" / "review_cycle.yaml").write_text(
        "name: review_cycle\ndescription: Draft, then a person approves the review.\n"
        "inputs:\n  topic: {type: string, required: true, description: the subject}\n"
        "  rounds: {type: int, default: 2}\n"
        "steps:\n  - id: draft\n    uses: demo.echo\n    inputs: {topic: inputs.topic}\n"
        '    interrupt: {after: true, prompt: "Approve the draft?"}\n',
        encoding="utf-8",
    )
    (tmp_path / "shipped" / "broken.yaml").write_text(
        "name: broken\nsteps:\n  - id: Bad-Id\n    uses: demo.echo\n", encoding="utf-8"
    )
    return tmp_path


@pytest.fixture
def workbench(workspace: Path) -> Workbench:
    return Workbench(
        workspace=workspace, clock=lambda: FROZEN_WALL + 90.0, shipped_dir=workspace / "shipped"
    )
