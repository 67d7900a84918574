"""`workbench resume --answer` answers each waiting prompt on purpose, through the real process.

An answer is addressed to a step (``--answer STEP=ANSWER``) or to an interrupt id
(``--answer ID=ANSWER``); a bare ``--answer`` is for the one prompt that waits. One
answer for several waiting prompts is refused in one line listing what waits (step
and interrupt ids), with exit code 2, and nothing stored changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.states import RunStatus
from engine.store import InterruptRecord, RunStore

from .test_engine_cli import workbench

pytestmark = pytest.mark.timeout(300)

TWO_PROMPTS = """\
name: two_prompts
steps:
  - id: left
    uses: demo.echo
    interrupt: {after: true, kind: approval, prompt: "Ship the left half?"}
  - id: right
    uses: demo.echo
    interrupt: {after: true, kind: approval, prompt: "Ship the right half?"}
    optional: true
  - id: join
    uses: demo.gather
    depends_on: [left, right]
    trigger: all_done
"""


def start_waiting(workspace: Path) -> str:
    """The output of starting a run that stops WAITING with two prompts pending."""
    workflow = workspace / "two_prompts.yaml"
    workflow.write_text(TWO_PROMPTS, encoding="utf-8")
    started = workbench(workspace, "run", str(workflow), "--headless", "--on-interrupt", "wait")
    assert started.returncode == 4, started.stdout + started.stderr
    return started.stdout


def waiting_run(workspace: Path) -> tuple[str, list[InterruptRecord]]:
    """A run stored WAITING with its two prompts pending (left, right)."""
    start_waiting(workspace)
    with RunStore(workspace / "runs.sqlite") as store:
        run_id = store.list_runs()[0].run_id
        pending = sorted(store.pending_interrupts(run_id), key=lambda p: p.step_id)
    assert [p.step_id for p in pending] == ["left", "right"]
    return run_id, pending


def test_the_waiting_hint_addresses_each_prompt(tmp_path: Path) -> None:
    assert "--answer left=approve --answer right=approve" in start_waiting(tmp_path)


def stored(workspace: Path, run_id: str) -> tuple[RunStatus, list[InterruptRecord], int]:
    with RunStore(workspace / "runs.sqlite") as store:
        return (
            store.get_run(run_id).status,
            store.pending_interrupts(run_id),
            len(store.events(run_id)),
        )


def answers_given(workspace: Path, run_id: str) -> dict[str, str]:
    """Step id -> the action its prompt was answered with."""
    with RunStore(workspace / "runs.sqlite") as store:
        return {
            e.step_id: e.answer["action"]
            for e in store.events(run_id)
            if e.kind == "interrupt_resolved"
        }


def test_one_answer_for_two_waiting_prompts_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    run_id, pending = waiting_run(tmp_path)
    before = stored(tmp_path, run_id)
    refused = workbench(tmp_path, "resume", run_id, "--answer", "approve")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    for prompt in pending:
        assert prompt.step_id in lines[0] and prompt.interrupt_id in lines[0]
    assert "Traceback" not in refused.stderr
    assert stored(tmp_path, run_id) == before


def test_an_address_that_names_no_waiting_prompt_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    run_id, pending = waiting_run(tmp_path)
    before = stored(tmp_path, run_id)
    refused = workbench(
        tmp_path, "resume", run_id, "--answer", "left=approve", "--answer", "centre=approve"
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "'centre'" in line and all(p.interrupt_id in line for p in pending)
    assert stored(tmp_path, run_id) == before


def test_each_prompt_gets_the_answer_addressed_to_its_step(tmp_path: Path) -> None:
    run_id, _ = waiting_run(tmp_path)
    resumed = workbench(
        tmp_path, "resume", run_id, "--answer", "left=approve", "--answer", "right=reject"
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert answers_given(tmp_path, run_id) == {"left": "approve", "right": "reject"}
    assert stored(tmp_path, run_id)[0] == RunStatus.COMPLETED


def test_answers_addressed_by_interrupt_id_one_at_a_time(tmp_path: Path) -> None:
    """One addressed answer leaves the other prompt waiting; then a bare answer is for it alone."""
    run_id, (left, right) = waiting_run(tmp_path)
    first = workbench(
        tmp_path,
        "resume",
        run_id,
        "--answer",
        f"{right.interrupt_id}=reject",
        "--on-interrupt",
        "wait",
    )
    assert first.returncode == 4, first.stdout + first.stderr
    status, still, _ = stored(tmp_path, run_id)
    assert status == RunStatus.WAITING
    assert [p.interrupt_id for p in still] == [left.interrupt_id]
    assert answers_given(tmp_path, run_id) == {"right": "reject"}
    second = workbench(tmp_path, "resume", run_id, "--answer", "approve")
    assert second.returncode == 0, second.stdout + second.stderr
    assert answers_given(tmp_path, run_id) == {"left": "approve", "right": "reject"}
