"""The end of a headless run stays a screenful however many steps the run has (issue 26).

A run of up to ``FULL_TABLE_STEPS`` steps ends with every step's row; a larger one with the count
of steps in each status, the first ``ATTENTION_ROWS`` steps that did not succeed (the most
urgent first) and the command that lists every step — drawn by the real ``workbench`` process.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.protocol import ExecutionResult
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.store import RunStore, StepResult
from tests.cli.test_engine_cli import workbench
from tui import exit_codes
from tui.commands.common import step_statuses
from tui.present.headless import ATTENTION_ROWS, FULL_TABLE_STEPS

pytestmark = pytest.mark.timeout(600)

SCREEN_LINES = 50
"""The most lines the end of a run may take: the status counts, the steps that need attention,
the pointer to the rest and the run's own lines."""


def chain(path: Path, size: int, failing: int | None = None) -> Path:
    """A chain of ``size`` echo steps; step ``failing`` (if any) fails, so every later one is
    UPSTREAM_FAILED."""
    lines = ["name: chain", "steps:"]
    for number in range(size):
        uses = "demo.fail" if number == failing else "demo.echo"
        needs = f", depends_on: [s{number - 1}]" if number else ""
        lines.append(f"  - {{id: s{number}, uses: {uses}{needs}}}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def end_of_run(stdout: str) -> list[str]:
    """The lines printed after the run's last progress line: its closing summary."""
    lines = stdout.splitlines()
    last = max(i for i, line in enumerate(lines) if "chain steps settled:" in line)
    return lines[last + 1 :]


def step_rows(lines: list[str]) -> list[str]:
    return [match.group(1) for line in lines if (match := re.match(r"^│ (s\d+) ", line))]


def test_a_large_run_ends_with_counts_and_the_steps_that_need_attention(tmp_path: Path) -> None:
    size, failing = 300, 3
    done = workbench(
        tmp_path / "ws", "run", "--headless", str(chain(tmp_path / "chain.yaml", size, failing))
    )
    assert done.returncode == exit_codes.FAILED, done.stderr
    closing = end_of_run(done.stdout)
    assert len(closing) <= SCREEN_LINES, "\n".join(closing)
    shown = "\n".join(closing)
    assert re.search(r"│ SUCCEEDED\s+│\s+3 │", shown), shown
    assert re.search(r"│ FAILED\s+│\s+1 │", shown), shown
    assert re.search(rf"│ UPSTREAM_FAILED\s+│\s+{size - failing - 1} │", shown), shown
    upstream = [f"s{number}" for number in range(failing + 1, size)]
    assert step_rows(closing) == [f"s{failing}", *upstream[: ATTENTION_ROWS - 1]], shown
    assert f"steps that need attention ({ATTENTION_ROWS} of {size - failing})" in shown
    [run_id] = re.findall(r"^every step: workbench runs show (\S+)$", shown, re.M)

    every = workbench(tmp_path / "ws", "runs", "show", run_id, "--json")
    assert every.returncode == 0, every.stderr
    assert [step["step_id"] for step in json.loads(every.stdout)["steps"]] == [
        f"s{number}" for number in range(size)
    ]


def test_a_run_that_fits_a_screen_still_ends_with_every_step(tmp_path: Path) -> None:
    done = workbench(
        tmp_path / "ws", "run", "--headless", str(chain(tmp_path / "chain.yaml", FULL_TABLE_STEPS))
    )
    assert done.returncode == exit_codes.COMPLETED, done.stderr
    closing = end_of_run(done.stdout)
    assert step_rows(closing) == [f"s{number}" for number in range(FULL_TABLE_STEPS)]
    assert "every step: workbench runs show" not in "\n".join(closing)


def test_the_statuses_come_from_the_engine_or_else_from_the_store(tmp_path: Path) -> None:
    """A local run's result carries every step's status; a run followed on a server carries
    none, and its statuses are read from the store in the workflow's order (a step with no
    stored result is PENDING)."""
    wf = WorkflowDefinition(
        name="wf", steps=[StepSpec(id=step_id, uses="demo.echo") for step_id in ("b", "a", "c")]
    )
    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.create_run(wf, {}, "kahn", "test")
        store.save_step(run_id, StepResult(step_id="a", status=StepStatus.FAILED))
        store.save_step(run_id, StepResult(step_id="b", status=StepStatus.SUCCEEDED))
        followed = ExecutionResult(run_id=run_id, status=RunStatus.FAILED)
        assert list(step_statuses(store, followed).items()) == [
            ("b", StepStatus.SUCCEEDED),
            ("a", StepStatus.FAILED),
            ("c", StepStatus.PENDING),
        ]
        given = {"b": StepStatus.SKIPPED, "a": StepStatus.SUCCEEDED, "c": StepStatus.SUCCEEDED}
        local = followed.model_copy(update={"step_statuses": given})
        assert step_statuses(store, local) == given
