"""The run store under real faults: a read-only workspace (permissions enforced by dropping
root's capabilities with setpriv) and a full disk (a tiny tmpfs). Every write failure is a
StoreWriteError naming the file and what to do; the command line prints it as one line with
exit code 2; nothing stored before is lost or changed."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from engine.events import Log
from engine.spec import StepSpec, WorkflowDefinition
from engine.sqlite_file import StoreFileError, StoreWriteError
from engine.states import RunStatus
from engine.store import RunStore
from tests.cli.test_engine_cli import workbench
from tests.disks import fill
from workflows import WORKFLOWS_DIR

REPO = Path(__file__).resolve().parents[2]
WF = WorkflowDefinition(name="faults", steps=[StepSpec(id="a", uses="demo.echo")])
SETPRIV = shutil.which("setpriv")


def stored_run(db: Path) -> str:
    with RunStore(db) as store:
        run_id = store.create_run(WF, {}, "kahn", "test")
        store.append(Log(run_id=run_id, message="before the fault"))
        store.set_status(run_id, RunStatus.COMPLETED)
    return run_id


def assert_intact(db: Path, run_id: str) -> None:
    with closing(sqlite3.connect(db)) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with RunStore(db) as store:
        assert [r.run_id for r in store.list_runs()] == [run_id]
        assert [e.kind for e in store.events(run_id)] == ["log"]
        assert store.get_run(run_id).status == RunStatus.COMPLETED


def unprivileged(*command: str) -> subprocess.CompletedProcess[str]:
    """``command`` as root without capabilities, so file permissions apply to it."""
    assert SETPRIV is not None
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": str(REPO)}
    env.pop("WORKBENCH_HOME", None)
    return subprocess.run(
        [SETPRIV, "--inh-caps=-all", "--bounding-set=-all", *command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=240,
    )


@pytest.fixture(params=["file", "file and folder"])
def read_only_workspace(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Path, str]]:
    """A workspace with one finished run whose store file (and, in the second case, its
    folder) is read-only."""
    if SETPRIV is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to drop the capabilities that bypass permissions")
    workspace = tmp_path / "workspace"
    run_id = stored_run(workspace / "runs.sqlite")
    locked = [*workspace.iterdir()] + ([workspace] if request.param != "file" else [])
    for path in locked:
        path.chmod(0o555 if path.is_dir() else 0o444)
    yield workspace, run_id
    for path in reversed(locked):
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_write_to_a_read_only_store_file_is_a_store_write_error(tmp_path: Path) -> None:
    if SETPRIV is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to drop the capabilities that bypass permissions")
    workspace = tmp_path / "workspace"
    run_id = stored_run(workspace / "runs.sqlite")
    (workspace / "runs.sqlite").chmod(0o444)
    probe = (
        "import sys\n"
        "from engine.store import RunStore\n"
        "from engine.sqlite_file import StoreWriteError\n"
        "from engine.states import RunStatus\n"
        "store = RunStore(sys.argv[1])\n"
        "print(len(store.list_runs()))\n"
        "try:\n"
        "    store.set_status(sys.argv[2], RunStatus.FAILED)\n"
        "except StoreWriteError as error:\n"
        "    print(error)\n"
    )
    done = unprivileged(sys.executable, "-c", probe, str(workspace / "runs.sqlite"), run_id)
    assert done.returncode == 0, done.stderr
    listed, message = done.stdout.strip().splitlines()
    assert listed == "1"
    assert message == (
        f"{workspace / 'runs.sqlite'}: cannot write the run store (attempt to write a readonly"
        f" database) — make {workspace / 'runs.sqlite'} and {workspace} writable, or choose"
        " another --workspace; what was stored before is kept"
    )
    assert_intact(workspace / "runs.sqlite", run_id)


def test_run_in_a_read_only_workspace_prints_one_line_and_exits_2(read_only_workspace) -> None:
    workspace, run_id = read_only_workspace
    done = unprivileged(
        sys.executable,
        "-m",
        "tui.cli",
        "--workspace",
        str(workspace),
        "run",
        str(WORKFLOWS_DIR / "fan_out.yaml"),
        "--headless",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(workspace) in lines[0] and "writable" in lines[0]
    assert_intact(workspace / "runs.sqlite", run_id)


def test_a_full_disk_is_a_store_write_error_and_freeing_space_lets_writes_continue(
    tiny_disk: Path,
) -> None:
    db = tiny_disk / "runs.sqlite"
    run_id = stored_run(db)
    store = RunStore(db)  # open, as a run's store is when the disk fills up
    filler = tiny_disk / "filler"
    with filler.open("wb", buffering=0) as fill:
        try:
            while True:
                fill.write(b"\0" * 4096)
        except OSError:
            pass  # the disk is full
    with pytest.raises(StoreWriteError) as caught:
        for index in range(10_000):
            store.append(Log(run_id=run_id, message="x" * 2000 + str(index)))
    message = str(caught.value)
    assert isinstance(caught.value, StoreFileError) and "\n" not in message
    assert message.startswith(f"{db}: cannot write the run store (")
    assert message.endswith(
        "free disk space, then continue a stopped run with workbench resume;"
        " what was stored before is kept"
    )
    filler.unlink()
    written = store.append(Log(run_id=run_id, message="after space was freed"))
    events = store.events(run_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].seq == written.seq
    store.close()
    with closing(sqlite3.connect(db)) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_disk_that_fills_up_mid_run_stops_it_in_one_line_and_resume_finishes_it(
    tiny_disk: Path,
) -> None:
    workflow = str(WORKFLOWS_DIR / "fan_out.yaml")
    first = workbench(tiny_disk, "run", workflow, "--headless")
    assert first.returncode == 0, first.stderr
    filler = fill(tiny_disk, 150 * 1024)  # room to start a run, not to finish it
    stopped = workbench(tiny_disk, "run", workflow, "--headless")
    assert stopped.returncode == 2, stopped.stdout + stopped.stderr
    assert stopped.stderr.strip().splitlines() == [
        f"error: {tiny_disk / 'runs.sqlite'}: cannot write the run store (database or disk is"
        " full) — free disk space, then continue a stopped run with workbench resume; what was"
        " stored before is kept"
    ]
    filler.unlink()
    with RunStore(tiny_disk / "runs.sqlite") as store:
        newest, earlier = store.list_runs()
        assert earlier.status == RunStatus.COMPLETED
        assert newest.stopped
    resumed = workbench(tiny_disk, "resume", newest.run_id)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    with closing(sqlite3.connect(tiny_disk / "runs.sqlite")) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with RunStore(tiny_disk / "runs.sqlite") as store:
        assert store.get_run(newest.run_id).status == RunStatus.COMPLETED


def test_a_batch_that_cannot_begin_is_a_store_write_error_and_the_store_goes_on(
    tmp_path: Path,
) -> None:
    """Another connection holds the file's write lock: a write that cannot open its transaction
    is the one-line StoreWriteError (not SQLite's own exception), the store's writer lock is
    released, and once the other commits the next write goes through."""
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as holder, RunStore(path) as other:
        run_id = holder.create_run(WF, {}, "kahn", "test")
        other._db.execute("PRAGMA busy_timeout = 0")  # refused at once, not after waiting
        with holder.batch():
            holder.append(Log(run_id=run_id, message="held"))
            with pytest.raises(StoreWriteError) as refused:
                other.append(Log(run_id=run_id, message="refused"))
        assert str(refused.value).startswith(f"{path}: cannot write the run store (database is")
        other.append(Log(run_id=run_id, message="after"))
        assert [e.message for e in other.events(run_id)] == ["held", "after"]  # type: ignore[union-attr]
