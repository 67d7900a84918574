"""LangGraph checkpoints in their own SQLite file (DESIGN §9).

The checkpoints live in the workspace's ``checkpoints_db``, apart from the run
store, so LangGraph's writer never holds the run store's lock. The file is opened by the
rules of every workspace file (plumbing/sqlite_files.py: WAL mode with
``synchronous=NORMAL``, the busy timeout): a kill -9 loses nothing that was committed.
Runs are checkpointed with ``durability="sync"`` (every superstep is on disk before the
next one starts); the run store and the call journal stay the source of truth for step
results.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from plumbing.sqlite_files import BUSY_TIMEOUT_S, wal_pragmas

DURABILITY = "sync"


@asynccontextmanager
async def open_checkpointer(path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """An ``AsyncSqliteSaver`` on ``path``, set up and closed with the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(str(path), timeout=BUSY_TIMEOUT_S)
    try:
        for statement in wal_pragmas():
            await conn.execute(statement)
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        yield saver
    finally:
        await conn.close()
