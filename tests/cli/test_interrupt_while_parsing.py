"""Ctrl-C while the command line is still being parsed is the boundary's one line, exit 130."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tui.cli import cli
from tui.exit_codes import INTERRUPTED, INTERRUPTED_LINE


def test_ctrl_c_during_parsing_is_one_line_not_aborted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
        raise KeyboardInterrupt

    # The signal lands while click parses the root options (before any command's own boundary).
    monkeypatch.setattr(click.Group, "parse_args", interrupted)
    result = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "runs", "list"])
    assert result.exit_code == INTERRUPTED, result.output
    assert result.output.strip().splitlines() == [INTERRUPTED_LINE]
