"""The full-screen app says, when it starts, which collections of the workspace corpus were
indexed by an older version of the workbench — the line the command line prints
(research/default_corpus.py ``outdated_notices``) — and says nothing for an up-to-date corpus
or a workspace without one."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from click.testing import CliRunner

from tests.research.test_cli import docs
from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.cli import cli
from tui.launch.workbench import Workbench

SIZE = (120, 40)


def _indexed(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose corpus holds one collection (``widgets``) indexed today."""
    workspace = tmp_path / "ws"
    folder = docs(tmp_path)
    added = CliRunner().invoke(cli, ["--workspace", str(workspace), "corpus", "add", str(folder)])
    assert added.exit_code == 0, added.output
    return workspace, folder


async def _toasts_at_start(workspace: Path) -> list[tuple[str, str]]:
    app = WorkbenchApp(Workbench(workspace=workspace, shipped_dir=workspace / "none"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.corpus_notices is not None)
        return [(n.title, n.message) for n in app._notifications]


async def test_the_app_says_which_collection_is_outdated_and_what_to_run(tmp_path: Path) -> None:
    workspace, folder = _indexed(tmp_path)
    with closing(sqlite3.connect(workspace / "corpus.sqlite")) as db, db:
        db.execute("UPDATE document_derivation SET stamp = 'passages=1'")
    toasts = await _toasts_at_start(workspace)
    notices = [m for t, m in toasts if t == "corpus out of date"]
    assert len(notices) == 1, toasts
    assert notices[0].startswith(
        "widgets: 4 document(s) were indexed by an older version of the workbench"
    )
    assert f"workbench corpus add {folder} --name widgets" in notices[0]


async def test_an_up_to_date_corpus_or_none_at_all_is_not_mentioned(tmp_path: Path) -> None:
    workspace, _ = _indexed(tmp_path)
    assert not [m for t, m in await _toasts_at_start(workspace) if "corpus" in t + m]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not [m for t, m in await _toasts_at_start(empty) if "corpus" in t + m]
    assert not (empty / "corpus.sqlite").exists()


async def test_a_corpus_that_cannot_be_opened_is_one_warning_and_the_app_runs_on(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "corpus.sqlite").write_bytes(b"this is not a database " * 100)
    toasts = await _toasts_at_start(workspace)
    problems = [m for _, m in toasts if m.startswith("the corpus was not checked: ")]
    assert len(problems) == 1 and "\n" not in problems[0], toasts
    assert (workspace / "corpus.sqlite").read_bytes() == b"this is not a database " * 100
