"""`workbench run`, `resume` and `runs fork` keep what they loaded from the cycle collector while
they run, and give it back when the command ends (plumbing/collector.py): a command run inside
another process (a test, a tool) leaves that process's collector as it found it."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import plumbing.collector
from engine.store import RunStore
from tui.cli import cli

CHAIN = "name: chain\nsteps:\n  - {id: a, uses: demo.echo}\n  - {id: b, uses: demo.echo, depends_on: [a]}\n"
ASKS = (
    "name: asks\nsteps:\n  - {id: a, uses: demo.echo}\n"
    "  - id: b\n    uses: demo.echo\n    depends_on: [a]\n"
    '    interrupt: {after: true, kind: approval, prompt: "Ship it?"}\n'
)


@pytest.fixture
def freezes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The freeze count seen right after each call of the real ``kept_from_collection`` the
    commands make (so a command that stopped calling it is caught)."""
    seen: list[int] = []
    real = plumbing.collector.kept_from_collection

    def watched() -> Callable[[], None]:
        give_back = real()
        seen.append(gc.get_freeze_count())
        return give_back

    for module in ("tui.commands.run_cmds", "tui.commands.runs_cmds"):
        monkeypatch.setattr(f"{module}.kept_from_collection", watched)
    return seen


def workbench(tmp_path: Path, *args: str) -> str:
    assert gc.get_freeze_count() == 0
    result = CliRunner().invoke(cli, ["--workspace", str(tmp_path / "ws"), *args])
    assert gc.get_freeze_count() == 0, "the command left objects frozen"
    assert result.exit_code in (0, 4), result.output  # 4: a run left WAITING for an answer
    return result.output


def only_run(tmp_path: Path) -> str:
    with RunStore(tmp_path / "ws" / "runs.sqlite") as store:
        return store.list_runs()[-1].run_id


def test_a_run_in_this_process_freezes_while_it_runs_and_leaves_nothing_frozen(
    tmp_path: Path, freezes: list[int]
) -> None:
    workflow = tmp_path / "chain.yaml"
    workflow.write_text(CHAIN, encoding="utf-8")
    output = workbench(tmp_path, "run", "--headless", "--engine", "kahn", str(workflow))
    assert "COMPLETED" in output
    assert len(freezes) == 1 and freezes[0] > 0


def test_resume_and_fork_freeze_what_they_load_too(tmp_path: Path, freezes: list[int]) -> None:
    workflow = tmp_path / "asks.yaml"
    workflow.write_text(ASKS, encoding="utf-8")
    workbench(tmp_path, "run", "--headless", "--on-interrupt", "wait", str(workflow))
    run_id = only_run(tmp_path)
    assert "COMPLETED" in workbench(tmp_path, "resume", run_id, "--answer", "approve")
    forked = workbench(tmp_path, "runs", "fork", run_id, "--at", "b", "--on-interrupt", "wait")
    assert "WAITING" in forked
    assert len(freezes) == 3 and all(count > 0 for count in freezes)
