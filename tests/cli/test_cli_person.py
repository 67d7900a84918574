"""The command line for a person (issue 25, item 8), from the real `workbench` process: run ids
that never wrap, a research run that ends with its report, prompts that show a plan as a list and
take ``edit`` as an edit, progress that ends at its total."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
import yaml

from engine.events import InterruptResolved
from engine.states import RunStatus
from engine.store import RunStore
from tests.tools.sample_run import research_events, store_events
from tests.tui.terminal import PROCESS_S, WAIT_S, spawn_workbench, terminal_env
from tui.commands.research_cmds import research_summary
from workflows import WORKFLOWS_DIR

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[2]


def workbench(workspace: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("WORKBENCH_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "--workspace", str(workspace), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=240,
    )


def test_runs_list_at_80_columns_keeps_every_run_id_on_one_line(tmp_path: Path) -> None:
    """At 80 columns the run ids wrapped, so they could not be copied into resume."""
    ids = ["20261127-101010-abcdef", "20261127-111111-123456"]
    with RunStore(tmp_path / "runs.sqlite") as store:
        for run_id in ids:
            store_events(store, run_id, research_events(run_id), status=RunStatus.COMPLETED)
            store.set_status(run_id, RunStatus.COMPLETED, reason="a long reason " * 8)
    listed = workbench(tmp_path, "runs", "list")
    assert listed.returncode == 0, listed.stderr
    for run_id in ids:
        assert any(run_id in line for line in listed.stdout.splitlines()), listed.stdout
    assert max(len(line) for line in listed.stdout.splitlines()) <= 80


def test_a_research_run_ends_with_a_summary_and_the_report_path(tmp_path: Path) -> None:
    """It ended with escaped JSON cut at 300 characters."""
    folder = tmp_path / "runs" / "r1"
    folder.mkdir(parents=True)
    (folder / "report.md").write_text("# Report\n", encoding="utf-8")
    (folder / "quality.yaml").write_text(
        yaml.safe_dump(
            {
                "confidence_level": "moderate",
                "best_ci": 0.71,
                "selected_round": 2,
                "rounds_completed": 3,
                "failing_metrics": ["recency"],
                "stop_reason": "no further gain",
            }
        ),
        encoding="utf-8",
    )
    lines = research_summary(folder)
    assert lines[0] == (
        "confidence moderate · report from round R2 of 3 (CI 0.71) · stopped: no further gain"
    )
    assert lines[1] == "below the quality gate: recency"
    assert lines[-1] == f"report: {folder / 'report.md'}"
    assert not any("{" in line for line in lines)


PLAN_WORKFLOW = """\
name: plan_review
inputs:
  topic: {type: string, default: asyncio}
steps:
  - id: plan
    uses: demo.echo
    config:
      set:
        sub_questions:
          - {id: q1, text: What is a task?}
          - {id: q2, text: How does the loop pick the next one?}
    interrupt: {after: true, kind: approval, prompt: "Approve the research plan?"}
"""


def test_a_headless_prompt_lists_the_plan_and_edit_edits_it(tmp_path: Path) -> None:
    """The plan was JSON cut at 200 characters, and typing the offered ``edit`` recorded
    ``choose "edit"`` while the step just succeeded."""
    workflow = tmp_path / "plan_review.yaml"
    workflow.write_text(PLAN_WORKFLOW, encoding="utf-8")
    workspace = tmp_path / "ws"
    term = spawn_workbench(
        [
            "--workspace",
            str(workspace),
            "run",
            str(workflow),
            "--headless",
            "--on-interrupt",
            "ask",
        ],
        terminal_env(tmp_path),
    )
    try:
        child = term.child
        child.expect("Approve the research plan", timeout=WAIT_S)
        child.expect(r"1\. What is a task\?", timeout=WAIT_S)
        child.expect(r"2\. How does the loop pick the next one\?", timeout=WAIT_S)
        child.expect("edit", timeout=WAIT_S)
        child.expect(r"\]: ", timeout=WAIT_S)
        child.sendline("edit")
        child.expect("What is a task", timeout=WAIT_S)
        child.expect("→ ".encode(), timeout=WAIT_S)
        child.sendline("What is a coroutine?")
        child.expect("→ ".encode(), timeout=WAIT_S)
        child.sendline("-")
        child.expect(r"\+ ", timeout=WAIT_S)
        child.sendline("Who wakes a waiting task?")
        child.expect(r"\+ ", timeout=WAIT_S)
        child.sendline("")
        child.expect(pexpect.EOF, timeout=PROCESS_S)
    finally:
        term.close()
    with RunStore(workspace / "runs.sqlite") as store:
        (run,) = store.list_runs(5)
        resolved = [e for e in store.events(run.run_id) if isinstance(e, InterruptResolved)]
        outputs = store.step_results(run.run_id)["plan"].outputs
    assert [e.answer["action"] for e in resolved] == ["edit"]
    assert [q["text"] for q in outputs["sub_questions"]] == [
        "What is a coroutine?",
        "Who wakes a waiting task?",
    ]


def test_a_resumed_runs_progress_ends_at_its_total(tmp_path: Path) -> None:
    """``resume``'s progress ended at ``2/3 COMPLETED``: steps settled before it went uncounted."""
    started = workbench(
        tmp_path,
        "run",
        str(WORKFLOWS_DIR / "approval.yaml"),
        "--headless",
        "--on-interrupt",
        "wait",
    )
    assert started.returncode == 4, started.stderr
    run_id = started.stdout.split("workbench resume ")[1].split()[0]
    resumed = workbench(tmp_path, "resume", run_id, "--answer", "approve")
    assert resumed.returncode == 0, resumed.stderr
    final = [line for line in resumed.stdout.splitlines() if "steps settled" in line][-1]
    assert final == "approval steps settled: 3/3 (COMPLETED)", resumed.stdout
