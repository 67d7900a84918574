"""Hand-over into the app: `workbench run FILE.yaml` and `workbench research "question"` without
--headless open the app straight onto the new run. Driven as a person would, in a pseudo-terminal
(pexpect) read through pyte; every wait is bounded by a number of reads, never skipped."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from engine.events import InterruptResolved
from engine.states import RunStatus
from engine.store import RunStore, RunSummary
from tests.tui.terminal import (
    E2E_TIMEOUT_S,
    F2,
    PROCESS_S,
    WORKBENCH,
    spawn_workbench,
    terminal_env,
)


def approve_in_the_app(
    tmp_path: Path, workspace: Path, args: list[str], waiting: list[str]
) -> None:
    """Start ``workbench --workspace WORKSPACE ARGS``; see ``waiting`` on the run screen, approve, see
    the run complete, quit."""
    term = spawn_workbench(["--workspace", str(workspace), *args], terminal_env(tmp_path))
    try:
        for words in waiting:
            term.wait_for(words)
        term.press(F2, lambda: "COMPLETED" in term.text(), "the run completing")
        term.quit()
    finally:
        term.close()


def only_run(workspace: Path) -> tuple[RunSummary, list[InterruptResolved]]:
    with RunStore(workspace / "runs.sqlite") as store:
        [run] = store.list_runs()
        return run, [e for e in store.events(run.run_id) if isinstance(e, InterruptResolved)]


@pytest.mark.timeout(E2E_TIMEOUT_S)
def test_workbench_run_opens_the_app_on_the_run_and_the_answer_completes_it(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    approve_in_the_app(
        tmp_path,
        workspace,
        ["run", "workflows/approval.yaml"],
        # the prompt, and behind it the run screen: the waiting step and the queue bar
        ["Approve the plan?", "‖ plan", "1 waiting: plan (approval)"],
    )

    listing = subprocess.run(
        [WORKBENCH, "--workspace", str(workspace), "runs", "list"],
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=True,
    )
    run, answers = only_run(workspace)
    row = next(line for line in listing.stdout.splitlines() if run.run_id in line)
    assert "approval" in row and "COMPLETED" in row
    assert run.status is RunStatus.COMPLETED
    assert [(a.step_id, a.answer["action"], a.automatic) for a in answers] == [
        ("plan", "approve", False)
    ]


@pytest.mark.timeout(E2E_TIMEOUT_S)
def test_workbench_research_opens_the_app_on_the_run(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    approve_in_the_app(
        tmp_path,
        workspace,
        ["research", "How does asyncio schedule tasks?", "--max-rounds", "1"],
        ["Approve the research plan", "1 waiting: intake_scope"],
    )

    run, answers = only_run(workspace)
    assert run.workflow == "deep_research" and run.status is RunStatus.COMPLETED
    assert [(a.step_id, a.answer["action"], a.automatic) for a in answers] == [
        ("intake_scope", "approve", False)
    ]
    assert (workspace / "runs" / run.run_id / "report.md").is_file()
