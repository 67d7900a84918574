"""LangGraph's Postgres checkpointer with the run's lease checked in each write's transaction.

A worker that lost its run (engine/store/lease.py) must not write LangGraph's checkpoints of
it either: a frozen worker that wakes after another took the run over would otherwise store a
checkpoint older than the new holder's, which the next resume would read. So a checkpoint or
a task's writes of a run whose lease the run store claimed are written in one transaction that
first reads the run's epoch (``FOR SHARE``, as the run store's own writes do) and writes
nothing when it is no longer the one claimed: :class:`~engine.store.LeaseLost`. Runs whose
lease was never claimed (the embedded default, tests) are written as LangGraph writes them.

Imported only where a PostgreSQL store is used (psycopg and LangGraph's Postgres saver).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from engine.store.lease import LeaseLost
from engine.store.postgres import LEASE_EPOCH_SQL

LeaseOf = Callable[[str], "int | None"]
"""The lease epoch the run store claimed on a run (None: never claimed)."""

_WRITING: ContextVar[str | None] = ContextVar("checkpoint_run", default=None)
"""The run (LangGraph's thread id) whose checkpoint the current task is writing."""


class FencedPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` on a pool of ours whose writes check the run's lease."""

    def __init__(self, pool: AsyncConnectionPool[Any], lease_of: LeaseOf) -> None:
        super().__init__(pool)
        self._pool = pool
        self._lease_of = lease_of

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        token = _WRITING.set(str(config["configurable"]["thread_id"]))
        try:
            return await super().aput(config, checkpoint, metadata, new_versions)
        finally:
            _WRITING.reset(token)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        token = _WRITING.set(str(config["configurable"]["thread_id"]))
        try:
            await super().aput_writes(config, writes, task_id, task_path)
        finally:
            _WRITING.reset(token)

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        """LangGraph's cursor; for the writes of a leased run, one transaction that checks the
        lease first (instead of a pipeline, whose statements could not be fenced together)."""
        run_id = _WRITING.get()
        held = self._lease_of(run_id) if run_id is not None and pipeline else None
        if run_id is None or held is None:
            async with super()._cursor(pipeline=pipeline) as cursor:
                yield cursor
            return
        async with self.lock, self._pool.connection() as conn, conn.transaction():
            async with conn.cursor(binary=True, row_factory=dict_row) as cursor:
                await cursor.execute(LEASE_EPOCH_SQL, (run_id,))
                row = await cursor.fetchone()
                current = int(row["epoch"]) if row is not None else None
                if current != held:
                    raise LeaseLost(run_id, held, current)
                yield cursor
