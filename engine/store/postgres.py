"""The run store on a PostgreSQL server (DESIGN §13): the same API as the SQLite file.

Its schema is created and migrated by ``workbench db upgrade`` (engine/store/migrations);
opening a database whose schema is not at :data:`SCHEMA_REVISION` is refused with one line.

Transactions. A :meth:`~BaseRunStore.batch` holds one pooled connection from its first
statement to its commit; reads made inside it (on the batch's thread) see its writes, other
reads take a connection of their own. The durability rules are the SQLite store's: an event
is committed before it is fanned out, a journal entry before its value is returned.

Live events. The transaction that inserts a run's events also sends, once per run,
``NOTIFY workbench_events, '<run id> <highest seq>'``: PostgreSQL delivers it when (and only
when) the transaction commits, so a listener that ``LISTEN``\\s before reading the stored
events misses nothing. Seqs of one run are written by one holder at a time (its lease,
engine/store/lease.py) in increasing commits, so a reader never sees a later seq before an
earlier one.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.json import Json
from psycopg_pool import ConnectionPool

from engine.context import JournalEntry
from engine.events import RunEvent, event_from_json
from engine.store.base import BaseRunStore
from engine.store.ownership import RunOwner, with_owner_status
from engine.store.records import (
    INTERRUPT_COLUMNS,
    STEP_HISTORY_SELECT,
    STEP_RESULTS_SELECT,
    InterruptRecord,
    RunInputs,
    RunRecord,
    RunSummary,
    StepResult,
    UnknownRun,
    interrupt_from_row,
    step_results_from_rows,
    stored_definition,
)
from plumbing.migrations import open_migrated_pool
from plumbing.postgres import Database, DatabaseError

SCHEMA_REVISION = "runs_0002"
"""The newest revision of engine/store/migrations: the schema this code reads and writes."""
EVENTS_CHANNEL = "workbench_events"
"""The channel every commit that stored events notifies, with ``'<run id> <highest seq>'``."""
WHAT = "run store"
LEASE_EPOCH_SQL = "SELECT epoch FROM run_leases WHERE run_id = %s FOR SHARE"
"""A run's current lease epoch, read so that no claim changes it before the transaction ends
(the fence of every write of a handle that claimed the run, LangGraph's checkpoints too)."""

_RUN_NAMES = (
    "run_id",
    "workflow",
    "source",
    "definition",
    "engine",
    "engine_reason",
    "status",
    "reason",
    "inputs",
    "outputs",
    "created_ts",
    "updated_ts",
    "finished_ts",
    "parent_run_id",
    "forked_at",
)
_JSON_RUN_FIELDS = {"inputs", "outputs"}
_OWNER_COLUMNS = ("host", "pid", "token", "proc_start", "claimed_ts")
_RUN_SELECT = (
    "SELECT "
    + ", ".join(
        "GREATEST(r.updated_ts, COALESCE(e.updated_ts, r.updated_ts))"
        if name == "updated_ts"
        else f"r.{name}"
        for name in _RUN_NAMES
    )
    + ", COALESCE(e.engine_state, '{}'::json)"
    + ", (r.definition::json -> 'inputs')"
    + "".join(f", o.{name}" for name in _OWNER_COLUMNS)
    + " FROM runs r LEFT JOIN engine_states e ON e.run_id = r.run_id"
    " LEFT JOIN run_owners o ON o.run_id = r.run_id"
)


class PostgresRunStore(BaseRunStore):
    """The run store in a PostgreSQL database (``store: postgresql://…`` in the config)."""

    def __init__(
        self,
        database: Database | str,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        pool_size: int = 4,
    ) -> None:
        super().__init__(clock=clock, monotonic=monotonic)
        self.database = database if isinstance(database, Database) else Database(database)
        self._pool = open_migrated_pool(self.database, WHAT, SCHEMA_REVISION, max_size=pool_size)
        self._tx: psycopg.Connection[Any] | None = None
        self._announce: dict[str, int] = {}
        """Runs given events by the open transaction, with the highest seq: what it notifies."""

    # -- transactions ---------------------------------------------------------
    def _begin(self) -> None:
        self._tx = self._pool.getconn()

    def _commit(self) -> None:
        conn = self._connection()
        for run_id, seq in self._announce.items():
            conn.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, f"{run_id} {seq}"))
        conn.commit()
        self._end()

    def _rollback(self) -> None:
        if self._tx is not None:
            try:
                self._tx.rollback()
            except psycopg.Error:
                pass  # a broken connection: the server ended the transaction; the pool drops it
        self._end()

    def _end(self) -> None:
        self._announce.clear()
        if self._tx is not None:
            conn, self._tx = self._tx, None
            self._pool.putconn(conn)

    def _write_failure(self, error: BaseException) -> Exception | None:
        if isinstance(error, psycopg.Error):
            return self.database.error(WHAT, error)
        return None

    def _connection(self) -> psycopg.Connection[Any]:
        if self._tx is None:
            raise RuntimeError("a run store write outside a batch")
        return self._tx

    def connection(self) -> psycopg.Connection[Any]:
        """The open batch's connection: where a write to another table of the database (the
        run queue's job) goes to commit, or roll back, with the batch."""
        return self._connection()

    @property
    def pool(self) -> ConnectionPool[Any]:
        """The store's connection pool (the run queue's look-ups share it)."""
        return self._pool

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> psycopg.Cursor[Any]:
        """Execute a statement of the open batch."""
        return self._connection().execute(sql, params)

    # -- writes ---------------------------------------------------------------
    def _last_event(self, run_id: str) -> tuple[int, float]:
        rows = self._query(
            "SELECT seq, mono FROM events WHERE run_id = %s ORDER BY seq DESC LIMIT 1", (run_id,)
        )
        return (int(rows[0][0]), float(rows[0][1])) if rows else (0, 0.0)

    def _write_event(self, event: RunEvent) -> None:
        self._run(
            "INSERT INTO events (run_id, seq, kind, mono, body) VALUES (%s, %s, %s, %s, %s)",
            (event.run_id, event.seq, event.kind, event.mono, event.model_dump_json()),
        )
        self._announce[event.run_id] = event.seq

    def _insert_run(self, record: RunRecord) -> None:
        self._run(
            f"INSERT INTO runs ({', '.join(_RUN_NAMES)})"
            f" VALUES ({', '.join(['%s'] * len(_RUN_NAMES))})",
            (
                record.run_id,
                record.workflow,
                record.source,
                record.definition.model_dump_json(),
                record.engine,
                record.engine_reason,
                record.status.value,
                record.reason,
                _json(record.inputs),
                _json(record.outputs),
                record.created_ts,
                record.updated_ts,
                record.finished_ts,
                record.parent_run_id,
                record.forked_at,
            ),
        )
        if record.engine_state:
            self._write_engine_state(record.run_id, record.engine_state, record.updated_ts)

    def _update_run(self, run_id: str, values: dict[str, Any]) -> None:
        columns = ", ".join(f"{name} = %s" for name in values)
        params = [_json(v) if name in _JSON_RUN_FIELDS else v for name, v in values.items()]
        cursor = self._run(f"UPDATE runs SET {columns} WHERE run_id = %s", (*params, run_id))
        if cursor.rowcount == 0:
            raise UnknownRun(run_id)

    def _write_engine_state(self, run_id: str, state: dict[str, Any], updated_ts: float) -> None:
        cursor = self._run(
            "INSERT INTO engine_states (run_id, engine_state, updated_ts)"
            " SELECT %s, %s, %s WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = %s)"
            " ON CONFLICT (run_id) DO UPDATE SET engine_state = EXCLUDED.engine_state,"
            " updated_ts = EXCLUDED.updated_ts",
            (run_id, _json(state), updated_ts, run_id),
        )
        if cursor.rowcount == 0:
            raise UnknownRun(run_id)

    def _write_step(self, run_id: str, result: StepResult) -> None:
        self._run(
            "INSERT INTO step_results"
            " (run_id, step_id, status, iteration, outputs, reason, routed_by, not_routed_by, runs)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (run_id, step_id) DO UPDATE SET status = EXCLUDED.status,"
            " iteration = EXCLUDED.iteration, outputs = EXCLUDED.outputs,"
            " reason = EXCLUDED.reason, routed_by = EXCLUDED.routed_by,"
            " not_routed_by = EXCLUDED.not_routed_by, runs = EXCLUDED.runs",
            (
                run_id,
                result.step_id,
                result.status.value,
                result.iteration,
                _json(result.outputs),
                result.reason,
                _json(result.routed_by),
                _json(result.not_routed_by),
                result.runs,
            ),
        )
        if result.status.settled:
            self._run(
                "INSERT INTO step_history (run_id, step_id, iteration, status, outputs, reason)"
                " VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (run_id, step_id, iteration) DO UPDATE SET"
                " status = EXCLUDED.status, outputs = EXCLUDED.outputs, reason = EXCLUDED.reason",
                (
                    run_id,
                    result.step_id,
                    result.iteration,
                    result.status.value,
                    _json(result.outputs),
                    result.reason,
                ),
            )

    def _write_journal(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        self._run(
            "INSERT INTO journal (run_id, step_id, iteration, call_index, kind, payload)"
            " VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (run_id, step_id, iteration, call_index) DO UPDATE SET"
            " kind = EXCLUDED.kind, payload = EXCLUDED.payload",
            (run_id, step_id, iteration, index, entry.kind, _json(entry.payload)),
        )

    def _write_interrupt(self, record: InterruptRecord) -> None:
        self._run(
            f"INSERT INTO interrupts ({INTERRUPT_COLUMNS})"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (interrupt_id) DO UPDATE SET run_id = EXCLUDED.run_id,"
            " step_id = EXCLUDED.step_id, iteration = EXCLUDED.iteration,"
            " request = EXCLUDED.request, status = EXCLUDED.status, answer = EXCLUDED.answer,"
            " created_ts = EXCLUDED.created_ts, resolved_ts = EXCLUDED.resolved_ts",
            (
                record.interrupt_id,
                record.run_id,
                record.step_id,
                record.iteration,
                record.request.model_dump_json(),
                record.status,
                record.answer.model_dump_json() if record.answer else None,
                record.created_ts,
                record.resolved_ts,
            ),
        )

    def _read_owner(self, run_id: str) -> RunOwner | None:
        rows = self._query(
            f"SELECT {', '.join(_OWNER_COLUMNS)} FROM run_owners WHERE run_id = %s", (run_id,)
        )
        return RunOwner(**dict(zip(_OWNER_COLUMNS, rows[0]))) if rows else None

    def _write_owner(self, run_id: str, owner: RunOwner | None) -> None:
        if owner is None:
            self._run("DELETE FROM run_owners WHERE run_id = %s", (run_id,))
            return
        self._run(
            f"INSERT INTO run_owners (run_id, {', '.join(_OWNER_COLUMNS)})"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET"
            " host = EXCLUDED.host, pid = EXCLUDED.pid, token = EXCLUDED.token,"
            " proc_start = EXCLUDED.proc_start, claimed_ts = EXCLUDED.claimed_ts",
            (run_id, owner.host, owner.pid, owner.token, owner.proc_start, owner.claimed_ts),
        )

    def _read_epoch(self, run_id: str) -> int | None:
        row = self._run(LEASE_EPOCH_SQL, (run_id,)).fetchone()
        return int(row[0]) if row else None

    def _next_epoch(self, run_id: str, holder: str, claimed_ts: float) -> int:
        row = self._run(
            "INSERT INTO run_leases (run_id, epoch, holder, claimed_ts) VALUES (%s, 1, %s, %s)"
            " ON CONFLICT (run_id) DO UPDATE SET epoch = run_leases.epoch + 1,"
            " holder = EXCLUDED.holder, claimed_ts = EXCLUDED.claimed_ts RETURNING epoch",
            (run_id, holder, claimed_ts),
        ).fetchone()
        assert row is not None
        return int(row[0])

    # -- reads ----------------------------------------------------------------
    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read: in the open batch when this thread holds one, else on a connection
        of its own."""
        rows: list[tuple[Any, ...]]
        if self._tx is not None and self._batch_owner == threading.get_ident():
            rows = self._tx.execute(sql, params).fetchall()
            return rows
        try:
            with self._pool.connection() as conn:
                rows = conn.execute(sql, params).fetchall()
                return rows
        except psycopg.Error as error:
            raise self.database.error(WHAT, error) from None

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        rows = self._query(
            "SELECT body FROM events WHERE run_id = %s AND seq > %s ORDER BY seq",
            (run_id, after_seq),
        )
        return [event_from_json(row[0]) for row in rows]

    def last_event(self, run_id: str, kind: str) -> RunEvent | None:
        rows = self._query(
            "SELECT body FROM events WHERE run_id = %s AND kind = %s ORDER BY seq DESC LIMIT 1",
            (run_id, kind),
        )
        return event_from_json(rows[0][0]) if rows else None

    def _run_values(self, row: tuple[Any, ...]) -> dict[str, Any]:
        values = dict(zip(_RUN_NAMES, row))
        rest = row[len(_RUN_NAMES) :]
        values["engine_state"] = rest[0]
        values["declared_inputs"] = list(rest[1] or {})
        owner_row = rest[2:]
        owner = (
            RunOwner(**dict(zip(_OWNER_COLUMNS, owner_row))) if owner_row[0] is not None else None
        )
        return with_owner_status(values, owner)

    def _newest(self, limit: int) -> list[dict[str, Any]]:
        rows = self._query(
            f"{_RUN_SELECT} ORDER BY r.created_ts DESC, r.run_id DESC LIMIT %s", (limit,)
        )
        return [self._run_values(row) for row in rows]

    def list_runs(self, limit: int = 50) -> list[RunSummary]:
        return [
            RunSummary.model_validate(
                {k: v for k, v in values.items() if k in RunSummary.model_fields}
            )
            for values in self._newest(limit)
        ]

    def list_runs_with_inputs(self, limit: int = 50) -> list[RunInputs]:
        return [
            RunInputs.model_validate(
                {k: v for k, v in values.items() if k in RunInputs.model_fields}
            )
            for values in self._newest(limit)
        ]

    def get_run(self, run_id: str) -> RunRecord:
        rows = self._query(f"{_RUN_SELECT} WHERE r.run_id = %s", (run_id,))
        if not rows:
            raise UnknownRun(run_id)
        values = self._run_values(rows[0])
        values["definition"] = stored_definition(run_id, values["definition"])
        return RunRecord.model_validate(
            {k: v for k, v in values.items() if k in RunRecord.model_fields}
        )

    def step_results(self, run_id: str) -> dict[str, StepResult]:
        return step_results_from_rows(
            self._query(
                f"{STEP_HISTORY_SELECT} WHERE run_id = %s ORDER BY step_id, iteration", (run_id,)
            ),
            self._query(f"{STEP_RESULTS_SELECT} WHERE run_id = %s", (run_id,)),
            lambda value: value,  # psycopg reads json columns itself
        )

    def journal_get(
        self, run_id: str, step_id: str, iteration: int, index: int
    ) -> JournalEntry | None:
        rows = self._query(
            "SELECT kind, payload FROM journal"
            " WHERE run_id = %s AND step_id = %s AND iteration = %s AND call_index = %s",
            (run_id, step_id, iteration, index),
        )
        return JournalEntry(kind=rows[0][0], payload=rows[0][1]) if rows else None

    def journal_entries(
        self, run_id: str, step_id: str, iteration: int
    ) -> list[tuple[int, JournalEntry]]:
        rows = self._query(
            "SELECT call_index, kind, payload FROM journal"
            " WHERE run_id = %s AND step_id = %s AND iteration = %s ORDER BY call_index",
            (run_id, step_id, iteration),
        )
        return [(int(i), JournalEntry(kind=kind, payload=payload)) for i, kind, payload in rows]

    def journal_of(self, run_id: str) -> list[tuple[str, int, int, JournalEntry]]:
        rows = self._query(
            "SELECT step_id, iteration, call_index, kind, payload FROM journal WHERE run_id = %s"
            " ORDER BY step_id, iteration, call_index",
            (run_id,),
        )
        return [
            (step, int(it), int(i), JournalEntry(kind=kind, payload=payload))
            for step, it, i, kind, payload in rows
        ]

    def interrupts(self, run_id: str) -> list[InterruptRecord]:
        rows = self._query(
            f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE run_id = %s"
            " ORDER BY created_ts, interrupt_id",
            (run_id,),
        )
        return [interrupt_from_row(row) for row in rows]

    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        rows = self._query(
            f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = %s FOR UPDATE",
            (interrupt_id,),
        )
        return interrupt_from_row(rows[0]) if rows else None

    def _interrupt_to_answer(self, interrupt_id: str) -> InterruptRecord | None:
        """The interrupt with its row locked until the batch ends (``FOR UPDATE``): a second
        answer waits for the first to commit, then reads it answered."""
        rows = self._run(
            f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = %s FOR UPDATE",
            (interrupt_id,),
        ).fetchall()
        return interrupt_from_row(rows[0]) if rows else None

    def close(self) -> None:
        super().close()
        with self._lock:
            self._pool.close()


def _json(value: Any) -> Json:
    """A value for a ``json`` column, written as the SQLite store writes its JSON text."""
    return Json(value, dumps=_dumps)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


__all__ = [
    "EVENTS_CHANNEL",
    "LEASE_EPOCH_SQL",
    "SCHEMA_REVISION",
    "DatabaseError",
    "PostgresRunStore",
]
