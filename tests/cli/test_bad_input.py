"""Bad input a person types or points the workbench at: one line naming the value and what to
do, a documented exit code, never a traceback or click's four-line usage block."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_engine_cli import workbench


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["runs", "list", "--limit", "-3"],
            "error: Invalid value for '--limit': -3 is not in the range 1<=x<=10000 — "
            "see `workbench runs list --help`",
        ),
        (["runs", "nosuch"], "error: No such command 'nosuch' — see `workbench runs --help`"),
        (["--nosuch", "runs"], "error: No such option '--nosuch' — see `workbench --help`"),
        (["runs", "show"], "error: Missing argument 'RUN_ID' — see `workbench runs show --help`"),
    ],
)
def test_a_usage_mistake_is_one_line_naming_the_help(
    tmp_path: Path, args: list[str], says: str
) -> None:
    done = workbench(tmp_path, *args)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [says]


def test_a_group_named_alone_still_shows_its_help(tmp_path: Path) -> None:
    done = workbench(tmp_path, "runs")
    assert done.returncode == 2
    assert "Commands:" in done.stderr + done.stdout
