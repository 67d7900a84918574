"""A workspace file the workbench cannot open is one line naming it and the remedy — never a traceback —
and the file is left exactly as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.sqlite_file import StoreFileError, open_sqlite_file
from engine.store import SCHEMA_VERSION, RunStore
from tests.cli.test_engine_cli import workbench
from workflows import WORKFLOWS_DIR

NOT_A_DATABASE = b"these are notes somebody saved under the wrong name\n" * 100


@pytest.mark.parametrize(
    ("filename", "command", "says"),
    [
        (
            "runs.sqlite",
            ["runs", "list"],
            "cannot open the run store (file is not a database) — it is not a run store "
            "or it is damaged: move it aside and a new one is started",
        ),
        (
            "runs.sqlite",
            ["run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless"],
            "cannot open the run store",
        ),
        ("runs.sqlite", ["app"], "cannot open the run store"),
        ("corpus.sqlite", ["corpus", "list"], "cannot open the corpus (file is not a database)"),
        (
            "provider_stats.sqlite3",
            ["providers"],
            "cannot open the provider statistics (file is not a database) — "
            "it holds only provider health history",
        ),
    ],
)
def test_an_unreadable_workspace_file_is_one_line_and_left_alone(
    tmp_path: Path, filename: str, command: list[str], says: str
) -> None:
    damaged = tmp_path / filename
    damaged.write_bytes(NOT_A_DATABASE)
    done = workbench(tmp_path, *command)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {damaged}: {says}")
    assert damaged.read_bytes() == NOT_A_DATABASE


def test_a_store_from_a_newer_version_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    RunStore(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    before = path.read_bytes()
    with pytest.raises(
        StoreFileError,
        match=rf"written by a newer Research Workbench \(run store version {SCHEMA_VERSION + 1}, "
        rf"this one reads up to {SCHEMA_VERSION}\) — upgrade, or use another --workspace",
    ):
        RunStore(path)
    assert path.read_bytes() == before


def test_a_path_that_cannot_hold_a_database_says_so(tmp_path: Path) -> None:
    a_folder = tmp_path / "runs.sqlite"
    a_folder.mkdir()
    with pytest.raises(
        StoreFileError,
        match=r"runs.sqlite: cannot open the run store \(unable to open database "
        r"file\) — check that the file and its folder are readable and writable",
    ):
        open_sqlite_file(a_folder, "run store", schema="", version=1)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    with pytest.raises(StoreFileError, match=r"notes.txt/runs.sqlite: cannot create its folder"):
        open_sqlite_file(a_file / "runs.sqlite", "run store", schema="", version=1)
