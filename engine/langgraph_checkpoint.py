"""LangGraph checkpoints in their own SQLite file (DESIGN §9).

The checkpoints live in the workspace's ``checkpoints_db``, apart from the run
store, so LangGraph's writer never holds the run store's lock. The file is opened by the
rules of every workspace file (plumbing/sqlite_files.py: WAL mode with
``synchronous=NORMAL``, the busy timeout): a kill -9 loses nothing that was committed.
Runs are checkpointed with ``durability="sync"`` (every superstep is on disk before the
next one starts); the run store and the call journal stay the source of truth for step
results.

With the PostgreSQL store the checkpoints are in the same database, kept by LangGraph's own
Postgres checkpointer (its tables are created by ``workbench db upgrade``). It runs on a pool
of ours whose connections are made with ``prepare_threshold=None`` and checked before use: a
pooled connection the server dropped is replaced rather than failing the run (the known
pitfall of a saver given its own connection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from plumbing.sqlite_files import BUSY_TIMEOUT_S, wal_pragmas

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from engine.langgraph_fenced import LeaseOf
    from plumbing.postgres import Database

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


def _saver_connection() -> dict[str, Any]:
    """What LangGraph's Postgres savers need of a connection, with ours."""
    from psycopg.rows import dict_row

    from plumbing.postgres import CONNECTION_KWARGS

    return CONNECTION_KWARGS | {"autocommit": True, "row_factory": dict_row}


@asynccontextmanager
async def open_postgres_checkpointer(
    database: Database, lease_of: LeaseOf
) -> AsyncIterator[AsyncPostgresSaver]:
    """LangGraph's ``AsyncPostgresSaver`` on a pool of ours, closed with the block; the writes
    of a run whose lease ``lease_of`` names check it (engine/langgraph_fenced.py)."""
    from psycopg import Error
    from psycopg_pool import AsyncConnectionPool

    from plumbing.postgres import configure_session_async

    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        database.conninfo,
        min_size=1,
        max_size=4,
        kwargs=_saver_connection(),
        configure=configure_session_async,
        check=AsyncConnectionPool.check_connection,
        name="checkpoints",
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=10.0)
    except Error as error:
        raise database.error("checkpoints", error) from None
    try:
        from engine.langgraph_fenced import FencedPostgresSaver

        yield FencedPostgresSaver(pool, lease_of)
    finally:
        await pool.close()


def setup_postgres_checkpoints(database: Database) -> None:
    """Create or migrate LangGraph's checkpoint tables (its own migrations; some of them
    build indexes CONCURRENTLY, so outside a transaction)."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection, Error

    try:
        with Connection.connect(database.conninfo, **_saver_connection()) as conn:
            PostgresSaver(conn).setup()
    except Error as error:
        raise database.error("checkpoints", error) from None
