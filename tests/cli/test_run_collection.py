"""`workbench run` keeps what it loaded from the cycle collector while it runs, and gives it
back when the command ends (plumbing/collector.py): a command run inside another process (a
test, a tool) leaves that process's collector as it found it."""

from __future__ import annotations

import gc
from pathlib import Path

from click.testing import CliRunner

from tui.cli import cli

CHAIN = "name: chain\nsteps:\n  - {id: a, uses: demo.echo}\n  - {id: b, uses: demo.echo, depends_on: [a]}\n"


def test_a_run_in_this_process_leaves_nothing_frozen(tmp_path: Path) -> None:
    workflow = tmp_path / "chain.yaml"
    workflow.write_text(CHAIN, encoding="utf-8")
    assert gc.get_freeze_count() == 0
    result = CliRunner().invoke(
        cli,
        [
            "--workspace",
            str(tmp_path / "ws"),
            "run",
            "--headless",
            "--engine",
            "kahn",
            str(workflow),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "COMPLETED" in result.output
    assert gc.get_freeze_count() == 0
