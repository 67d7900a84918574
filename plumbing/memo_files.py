"""Memo files: values the workbench can compute again, remembered on this machine.

A memo file is one SQLite file in the user cache dir (:func:`plumbing.app_dirs.cache_folder`)
mapping a key (bytes: a hash of everything the value depends on) to a value (bytes). The caller
makes the key; a value found under it is the one that computation gives, so nothing is ever
stale, only unused. A file keeps its newest ``max_entries`` values, the oldest written going
first. A memo that cannot be opened, read or written (a read-only home, a full disk, a lock
held past the busy timeout, a damaged file) reads as empty and takes nothing: it costs time,
never an answer, and raises nothing.
"""

from __future__ import annotations

import sqlite3
import threading

from plumbing.app_dirs import cache_folder
from plumbing.sqlite_files import connect, wal_pragmas

BUSY_TIMEOUT_S = 2.0
"""How long a read or write waits for another process's lock before it gives up."""
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memo ("
    " id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, value BLOB NOT NULL)"
)
_writing = threading.Lock()


def _open(name: str) -> sqlite3.Connection:
    db = connect(cache_folder() / name, isolation_level=None, busy_timeout_s=BUSY_TIMEOUT_S)
    try:
        for statement in wal_pragmas(BUSY_TIMEOUT_S):
            db.execute(statement)
        db.execute(_SCHEMA)
    except BaseException:
        db.close()
        raise
    return db


def read_memo(name: str, keys: list[bytes]) -> dict[bytes, bytes]:
    """{key: value} of the given keys that memo file ``name`` holds."""
    found: dict[bytes, bytes] = {}
    if not keys:
        return found
    try:
        db = _open(name)
    except (OSError, sqlite3.Error):
        return found
    try:
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            found.update(
                (bytes(key), bytes(value))
                for key, value in db.execute(
                    f"SELECT key, value FROM memo WHERE key IN ({','.join('?' * len(part))})",
                    part,
                )
            )
    except sqlite3.Error:
        return {}
    finally:
        db.close()
    return found


def write_memo(name: str, rows: list[tuple[bytes, bytes]], max_entries: int) -> None:
    """Remember ``rows`` (key, value) in memo file ``name``, keeping its newest ``max_entries``."""
    if not rows:
        return
    with _writing:
        try:
            db = _open(name)
        except (OSError, sqlite3.Error):
            return
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.executemany("INSERT OR IGNORE INTO memo(key, value) VALUES (?, ?)", rows)
                db.execute(
                    "DELETE FROM memo WHERE id <= (SELECT max(id) FROM memo) - ?", (max_entries,)
                )
        except sqlite3.Error:
            return
        finally:
            db.close()
