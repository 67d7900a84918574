"""The SQLite opening rules and fault classification every workspace file shares."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from plumbing.sqlite_files import (
    SqliteFault,
    connect,
    retry_while_locked,
    sqlite_fault,
    use_wal,
)


def test_a_file_opened_by_the_rules_is_in_wal_mode_with_its_folder_made(tmp_path: Path) -> None:
    path = tmp_path / "new" / "folder" / "x.sqlite"
    db = connect(path, busy_timeout_s=2.5)
    use_wal(db)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 2500
    db.close()


def test_connecting_writes_nothing_until_wal_is_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    before = path.read_bytes()
    connect(path).close()
    assert path.read_bytes() == before


def test_faults_by_result_code(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all " * 200)
    with pytest.raises(sqlite3.DatabaseError) as damaged:
        connect(junk).execute("SELECT * FROM sqlite_master").fetchall()
    assert sqlite_fault(damaged.value) is SqliteFault.DAMAGED

    path = tmp_path / "ro.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    read_only = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as refused:
        read_only.execute("INSERT INTO t VALUES (1)")
    assert sqlite_fault(refused.value) is SqliteFault.READ_ONLY
    read_only.close()

    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    waiter = connect(path, busy_timeout_s=0.0)
    with pytest.raises(sqlite3.OperationalError) as locked:
        waiter.execute("SELECT * FROM t").fetchall()
    assert sqlite_fault(locked.value) is SqliteFault.LOCKED
    waiter.close()
    holder.close()


def test_a_lock_held_past_the_busy_timeout_fails_once_as_locked(tmp_path: Path) -> None:
    path = tmp_path / "held.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    db = connect(path, busy_timeout_s=0.05)
    with pytest.raises(sqlite3.OperationalError) as failed:
        retry_while_locked(lambda: db.execute("PRAGMA journal_mode=WAL"), busy_timeout_s=0.05)
    assert sqlite_fault(failed.value) is SqliteFault.LOCKED
    db.close()
    holder.close()


@pytest.mark.parametrize(
    ("error", "fault"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), SqliteFault.FULL),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), SqliteFault.FULL),
        (PermissionError(errno.EACCES, "Permission denied"), SqliteFault.READ_ONLY),
        (OSError(errno.EROFS, "Read-only file system"), SqliteFault.READ_ONLY),
        (OSError(errno.EIO, "Input/output error"), SqliteFault.IO),
        (OSError(errno.ENOENT, "No such file"), SqliteFault.OTHER),
        (sqlite3.OperationalError("database or disk is full"), SqliteFault.FULL),
        (sqlite3.OperationalError("attempt to write a readonly database"), SqliteFault.READ_ONLY),
        (sqlite3.OperationalError("database is locked"), SqliteFault.LOCKED),
        (sqlite3.DatabaseError("file is not a database"), SqliteFault.DAMAGED),
        (sqlite3.OperationalError("disk I/O error"), SqliteFault.IO),
        (sqlite3.OperationalError("no such table: t"), SqliteFault.OTHER),
    ],
)
def test_faults_by_error_number_or_for_an_error_without_a_code_by_its_words(
    error: BaseException, fault: SqliteFault
) -> None:
    assert sqlite_fault(error) is fault
