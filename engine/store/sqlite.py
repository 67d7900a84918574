"""The durable run store: one SQLite file (DESIGN §9)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.context import JournalEntry
from engine.events import RunEvent, event_from_json
from engine.sqlite_file import open_sqlite_file, write_error
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

# ``engine_states`` holds the resume state (with the last ``budget`` event's counters). It has
# its own small row: an update rewrites the whole row, and the ``runs`` row carries the
# definition and its source (a large workflow's makes every per-step commit a large one).
# ``runs.engine_state`` is read when a run has no row there (files written before).
SCHEMA_VERSION = 3
"""Stamped into the file (``PRAGMA user_version``); a file with a higher one is refused.
2: an event's ``body`` leaves out what its row's columns hold (:data:`_EVENT_COLUMNS`); the
rows of a file written at 1 keep their whole body and are read as they are, and a program
that reads only version 1 refuses a file this one has written to instead of misreading it.
3: a settled step's counters are kept in its ``budget`` event and the ``engine_states`` row is
rewritten only when more than its counters change (resume takes the later of the two); a
program that reads only version 2 would resume from the row alone and undercount the run's
step starts and elapsed time, so it refuses the file instead."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    source TEXT NOT NULL,
    definition TEXT NOT NULL,
    engine TEXT NOT NULL,
    engine_reason TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    inputs TEXT NOT NULL,
    outputs TEXT NOT NULL DEFAULT '{}',
    engine_state TEXT NOT NULL DEFAULT '{}',
    created_ts REAL NOT NULL,
    updated_ts REAL NOT NULL,
    finished_ts REAL,
    parent_run_id TEXT,
    forked_at TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_ts);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    mono REAL NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS step_results (
    run_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    status TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    outputs TEXT NOT NULL,
    reason TEXT NOT NULL,
    routed_by TEXT NOT NULL,
    not_routed_by TEXT NOT NULL,
    runs INTEGER NOT NULL,
    PRIMARY KEY (run_id, step_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS step_history (
    run_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    status TEXT NOT NULL,
    outputs TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (run_id, step_id, iteration)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal (
    run_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    call_index INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, step_id, iteration, call_index)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS interrupts (
    interrupt_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    answer TEXT,
    created_ts REAL NOT NULL,
    resolved_ts REAL
);
CREATE INDEX IF NOT EXISTS interrupts_by_run ON interrupts (run_id);
CREATE TABLE IF NOT EXISTS engine_states (
    run_id TEXT PRIMARY KEY,
    engine_state TEXT NOT NULL,
    updated_ts REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_owners (
    run_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    token TEXT NOT NULL,
    proc_start TEXT,
    claimed_ts REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_leases (
    run_id TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL,
    holder TEXT NOT NULL,
    claimed_ts REAL NOT NULL
) WITHOUT ROWID;
"""

_RUN_COLUMNS = (
    "run_id, workflow, source, definition, engine, engine_reason, status, reason, inputs, outputs,"
    " engine_state, created_ts, updated_ts, finished_ts, parent_run_id, forked_at"
)
_RUN_NAMES = tuple(column.strip() for column in _RUN_COLUMNS.split(","))
_JSON_RUN_FIELDS = {"inputs", "outputs", "engine_state"}
_RUN_SELECT = (
    "SELECT "
    + ", ".join(
        {
            "engine_state": "COALESCE(e.engine_state, r.engine_state)",
            "updated_ts": "MAX(r.updated_ts, COALESCE(e.updated_ts, r.updated_ts))",
        }.get(name, f"r.{name}")
        for name in _RUN_NAMES
    )
    + (
        ", o.host, o.pid, o.token, o.proc_start, o.claimed_ts"
        " FROM runs r LEFT JOIN engine_states e ON e.run_id = r.run_id LEFT JOIN run_owners o ON o.run_id = r.run_id"
    )
)
_OWNER_COLUMNS = ("host", "pid", "token", "proc_start", "claimed_ts")


class RunStore(BaseRunStore):
    """The durable run store: one SQLite file (``runs.sqlite`` in the workspace)."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(clock=clock, monotonic=monotonic)
        self.path = Path(path)
        self._db = open_sqlite_file(
            self.path, "run store", schema=_SCHEMA, version=SCHEMA_VERSION, isolation_level=None
        )
        self._writes = self._db.cursor()
        """The cursor the writes of every step run on (all under the store's lock): a step
        makes about nine statements, and ``Connection.execute`` makes and registers a new
        cursor for each (issue 26)."""

    def _begin(self) -> None:
        self._writes.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        self._writes.execute("COMMIT")

    def _rollback(self) -> None:
        if self._db.in_transaction:  # SQLite ends some failed transactions itself (a full disk)
            self._db.execute("ROLLBACK")

    def _write_failure(self, error: BaseException) -> Exception | None:
        if isinstance(error, sqlite3.Error):
            return write_error(self.path, "run store", error)
        return None

    def _last_event(self, run_id: str) -> tuple[int, float]:
        row = self._db.execute(
            "SELECT seq, mono FROM events WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (run_id,)
        ).fetchone()
        return (int(row[0]), float(row[1])) if row else (0, 0.0)

    def _write_event(self, event: RunEvent) -> None:
        self._writes.execute(
            "INSERT INTO events (run_id, seq, kind, mono, body) VALUES (?, ?, ?, ?, ?)",
            (
                event.run_id,
                event.seq,
                event.kind,
                event.mono,
                event.__pydantic_serializer__.to_json(event, exclude=_EVENT_COLUMNS).decode(),
            ),
        )

    def _insert_run(self, record: RunRecord) -> None:
        self._db.execute(
            f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES ({', '.join('?' * len(_RUN_NAMES))})",
            (
                record.run_id,
                record.workflow,
                record.source,
                record.definition.model_dump_json(),
                record.engine,
                record.engine_reason,
                record.status.value,
                record.reason,
                _dumps(record.inputs),
                _dumps(record.outputs),
                _dumps(record.engine_state),
                record.created_ts,
                record.updated_ts,
                record.finished_ts,
                record.parent_run_id,
                record.forked_at,
            ),
        )

    def _update_run(self, run_id: str, values: dict[str, Any]) -> None:
        columns = ", ".join(f"{name} = ?" for name in values)
        params = [_dumps(v) if name in _JSON_RUN_FIELDS else v for name, v in values.items()]
        cursor = self._db.execute(f"UPDATE runs SET {columns} WHERE run_id = ?", (*params, run_id))
        if cursor.rowcount == 0:
            raise UnknownRun(run_id)

    def _write_engine_state(self, run_id: str, state: dict[str, Any], updated_ts: float) -> None:
        """Update the run's row; only the first write of a run (no row yet) inserts one, and
        only for a stored run. Runs are never deleted, so a run with a row here exists: the
        update, made with every settled step, does without the insert's look-up in ``runs``
        and the delete that ``INSERT OR REPLACE`` makes of the old row (issue 26)."""
        text = _dumps(state)
        cursor = self._writes
        cursor.execute(
            "UPDATE engine_states SET engine_state = ?, updated_ts = ? WHERE run_id = ?",
            (text, updated_ts, run_id),
        )
        if cursor.rowcount:
            return
        cursor.execute(
            "INSERT INTO engine_states (run_id, engine_state, updated_ts)"
            " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = ?)",
            (run_id, text, updated_ts, run_id),
        )
        if cursor.rowcount == 0:
            raise UnknownRun(run_id)

    def _write_step(self, run_id: str, result: StepResult) -> None:
        outputs = _dumps(result.outputs)
        self._writes.execute(
            "INSERT OR REPLACE INTO step_results"
            " (run_id, step_id, status, iteration, outputs, reason, routed_by, not_routed_by, runs)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                result.step_id,
                result.status.value,
                result.iteration,
                outputs,
                result.reason,
                _dumps(result.routed_by),
                _dumps(result.not_routed_by),
                result.runs,
            ),
        )
        if result.status.settled:
            self._writes.execute(
                "INSERT OR REPLACE INTO step_history (run_id, step_id, iteration, status, outputs, reason)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    result.step_id,
                    result.iteration,
                    result.status.value,
                    outputs,
                    result.reason,
                ),
            )

    def _write_journal(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO journal (run_id, step_id, iteration, call_index, kind, payload)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, step_id, iteration, index, entry.kind, _dumps(entry.payload)),
        )

    def _write_interrupt(self, record: InterruptRecord) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO interrupts"
            " (interrupt_id, run_id, step_id, iteration, request, status, answer, created_ts, resolved_ts)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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

    # -- reads ----------------------------------------------------------------
    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        rows = self._query(
            "SELECT seq, kind, mono, body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq",
            (run_id, after_seq),
        )
        run = _run_lead(run_id)
        return [event_from_json(_event_text(run, *row)) for row in rows]

    def last_event(self, run_id: str, kind: str) -> RunEvent | None:
        rows = self._query(
            "SELECT seq, kind, mono, body FROM events WHERE run_id = ? AND kind = ?"
            " ORDER BY seq DESC LIMIT 1",
            (run_id, kind),
        )
        return event_from_json(_event_text(_run_lead(run_id), *rows[0])) if rows else None

    def _run_row(self, row: tuple[Any, ...]) -> dict[str, Any]:
        values = dict(zip(_RUN_NAMES, row))
        for name in _JSON_RUN_FIELDS:
            values[name] = json.loads(values[name])
        owner_row = row[len(_RUN_NAMES) :]
        owner = (
            RunOwner(**dict(zip(_OWNER_COLUMNS, owner_row)))
            if owner_row and owner_row[0] is not None
            else None
        )
        return with_owner_status(values, owner)

    def _read_owner(self, run_id: str) -> RunOwner | None:
        row = self._db.execute(
            f"SELECT {', '.join(_OWNER_COLUMNS)} FROM run_owners WHERE run_id = ?", (run_id,)
        ).fetchone()
        return RunOwner(**dict(zip(_OWNER_COLUMNS, row))) if row else None

    def _write_owner(self, run_id: str, owner: RunOwner | None) -> None:
        if owner is None:
            self._db.execute("DELETE FROM run_owners WHERE run_id = ?", (run_id,))
            return
        self._db.execute(
            f"INSERT OR REPLACE INTO run_owners (run_id, {', '.join(_OWNER_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, owner.host, owner.pid, owner.token, owner.proc_start, owner.claimed_ts),
        )

    def _read_epoch(self, run_id: str) -> int | None:
        row = self._db.execute(
            "SELECT epoch FROM run_leases WHERE run_id = ?", (run_id,)
        ).fetchone()
        return int(row[0]) if row else None

    def _next_epoch(self, run_id: str, holder: str, claimed_ts: float) -> int:
        row = self._db.execute(
            "INSERT INTO run_leases (run_id, epoch, holder, claimed_ts) VALUES (?, 1, ?, ?)"
            " ON CONFLICT (run_id) DO UPDATE SET epoch = epoch + 1, holder = excluded.holder,"
            " claimed_ts = excluded.claimed_ts RETURNING epoch",
            (run_id, holder, claimed_ts),
        ).fetchone()
        return int(row[0])

    def list_runs(self, limit: int = 50) -> list[RunSummary]:
        rows = self._query(
            f"{_RUN_SELECT} ORDER BY r.created_ts DESC, r.run_id DESC LIMIT ?", (limit,)
        )
        summaries = []
        for row in rows:
            values = self._run_row(row)
            summaries.append(
                RunSummary.model_validate(
                    {k: v for k, v in values.items() if k in RunSummary.model_fields}
                )
            )
        return summaries

    def list_runs_with_inputs(self, limit: int = 50) -> list[RunInputs]:
        rows = self._query(
            f"{_RUN_SELECT} ORDER BY r.created_ts DESC, r.run_id DESC LIMIT ?", (limit,)
        )
        runs = []
        for row in rows:
            values = self._run_row(row)
            declared = list(json.loads(values["definition"]).get("inputs") or {})
            runs.append(
                RunInputs.model_validate(
                    {k: v for k, v in values.items() if k in RunInputs.model_fields}
                    | {"declared_inputs": declared}
                )
            )
        return runs

    def get_run(self, run_id: str) -> RunRecord:
        rows = self._query(f"{_RUN_SELECT} WHERE r.run_id = ?", (run_id,))
        if not rows:
            raise UnknownRun(run_id)
        values = self._run_row(rows[0])
        values["definition"] = stored_definition(run_id, values["definition"])
        return RunRecord.model_validate(values)

    def step_results(self, run_id: str) -> dict[str, StepResult]:
        return step_results_from_rows(
            self._query(
                f"{STEP_HISTORY_SELECT} WHERE run_id = ? ORDER BY step_id, iteration", (run_id,)
            ),
            self._query(f"{STEP_RESULTS_SELECT} WHERE run_id = ?", (run_id,)),
            json.loads,
        )

    def journal_get(
        self, run_id: str, step_id: str, iteration: int, index: int
    ) -> JournalEntry | None:
        rows = self._query(
            "SELECT kind, payload FROM journal WHERE run_id = ? AND step_id = ? AND iteration = ? AND call_index = ?",
            (run_id, step_id, iteration, index),
        )
        return JournalEntry(kind=rows[0][0], payload=json.loads(rows[0][1])) if rows else None

    def journal_entries(
        self, run_id: str, step_id: str, iteration: int
    ) -> list[tuple[int, JournalEntry]]:
        rows = self._query(
            "SELECT call_index, kind, payload FROM journal"
            " WHERE run_id = ? AND step_id = ? AND iteration = ? ORDER BY call_index",
            (run_id, step_id, iteration),
        )
        return [
            (int(index), JournalEntry(kind=kind, payload=json.loads(payload)))
            for index, kind, payload in rows
        ]

    def journal_of(self, run_id: str) -> list[tuple[str, int, int, JournalEntry]]:
        rows = self._query(
            "SELECT step_id, iteration, call_index, kind, payload FROM journal WHERE run_id = ?"
            " ORDER BY step_id, iteration, call_index",
            (run_id,),
        )
        return [
            (step, int(it), int(i), JournalEntry(kind=kind, payload=json.loads(payload)))
            for step, it, i, kind, payload in rows
        ]

    def interrupts(self, run_id: str) -> list[InterruptRecord]:
        rows = self._query(
            f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE run_id = ? ORDER BY created_ts, interrupt_id",
            (run_id,),
        )
        return [interrupt_from_row(row) for row in rows]

    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        rows = self._query(
            f"SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = ?",
            (interrupt_id,),
        )
        return interrupt_from_row(rows[0]) if rows else None

    def close(self) -> None:
        super().close()
        with self._lock:
            self._db.close()


_EVENT_COLUMNS = {"run_id", "seq", "kind", "mono"}
"""An event's fields its row holds as columns, left out of its ``body`` (schema version 2): a
step's three events are a third smaller, and the ``events`` table's pages fill and split a
third less often — most of the pages a step's commit writes are that table's (issue 26)."""
_WHOLE_BODY = '{"run_id":'
"""How a body written at schema version 1 begins (the event's first field), and one written
since never does: it leaves ``run_id`` out."""


def _run_lead(run_id: str) -> str:
    """How every event of ``run_id`` begins as JSON, up to ``"seq":`` (see :func:`_event_text`)."""
    return f'{{"run_id":{json.dumps(run_id)},"seq":'


def _event_text(run: str, seq: int, kind: str, mono: float, body: str) -> str:
    """The event's whole JSON: ``run`` (the run's id as the text begins, up to ``"seq":``)
    and the row's columns put back in front of its ``body`` — never an empty object: every
    event has its ``ts``, which no column holds."""
    if body.startswith(_WHOLE_BODY):
        return body
    return f'{run}{seq},"mono":{mono!r},"kind":{json.dumps(kind)},{body[1:]}'


_EMPTY_JSON: dict[type, str] = {dict: "{}", list: "[]"}
"""What an empty dict and list are written as: most steps' outputs and routing marks, several
times a step, spared a trip through the encoder."""


_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str).encode
"""``json.dumps(value, separators=(",", ":"), default=str)`` with its encoder made once:
``json.dumps`` makes a new one at every call that passes options (the engine state's JSON,
written with every settled step)."""


def _dumps(value: Any) -> str:
    if not value and type(value) in _EMPTY_JSON:
        return _EMPTY_JSON[type(value)]
    return _ENCODE(value)
