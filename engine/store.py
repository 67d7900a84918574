"""The run store: runs, their events, step results, the call journal and interrupts.

``RunStore`` keeps them in their own SQLite file (DESIGN §9): WAL mode,
``synchronous=NORMAL``, one connection that every write goes through (one
writer), ``busy_timeout`` for readers in other processes.

Durability and batching. In WAL mode with ``synchronous=NORMAL`` a commit is
a write into the WAL file without an fsync: once ``COMMIT`` returns the data is
in the operating system's page cache and survives ``kill -9`` of this process
(only a power cut may lose the last commits). So the rule "durable before it is
acted on" costs one commit, not one fsync, and the batching is chosen around
the engine's units of work rather than around time:

* every event is committed before it is fanned out to subscribers, and seq
  numbers are handed out under the writer lock, so a crash can lose only
  events nobody saw and never leaves a gap in a run's seq;
* a journal entry is committed before its value is returned to the step, so
  a call that has been acted on is always replayed, never repeated;
* :meth:`RunStore.batch` groups the writes of one engine transition — a step
  result, its history row, the engine's resume state and the events that
  announce them — into one commit, so a reader or a resume sees all of them
  or none.

There is no timer-based batching: a commit that waits for a timer is a commit
a crash can lose after the engine has acted on it.

Ownership. A RUNNING run records the process that drives it (:class:`RunOwner`:
host, pid, the pid's start time and a per-process token) from ``create_run`` or
:meth:`BaseRunStore.claim_owner` (resume) until ``set_status`` moves it out of
RUNNING. Reads report whether that process still runs (``owner_status``), so a
run whose process was killed shows as stopped and a live one is not resumed twice.

``InMemoryRunStore`` has the same API without a file (benchmarks, tests that
do not care about durability).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field

from engine.bus import BatchCallback, EventBus, Unsubscribe
from engine.context import InterruptAnswer, InterruptRequest, JournalEntry
from engine.events import RunEvent, event_from_json
from engine.spec import Frozen, WorkflowDefinition
from engine.sqlite_file import open_sqlite_file
from engine.states import RunStatus, StepStatus

_T = TypeVar("_T")
_Store = TypeVar("_Store", bound="BaseRunStore")


class UnknownRun(LookupError):
    """No run with this id is stored."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"no run {run_id!r} in the run store")
        self.run_id = run_id


class RunOwned(RuntimeError):
    """Another live process drives this run; it must not be resumed here."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunOwner(Frozen):
    """The process that drives a RUNNING run."""

    host: str
    pid: int
    token: str
    """Random per process: tells this process's own claims from another's that got the same pid."""
    proc_start: str | None = None
    """The pid's start time (Linux ``/proc/PID/stat``), so a reused pid is not taken for the owner."""
    claimed_ts: float = 0.0

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


OwnerStatus = Literal["", "alive", "gone", "unknown"]


def _proc_start(pid: int) -> tuple[str | None, bool]:
    """(the start time of ``pid``, whether it is a zombie); (None, False) where /proc is not readable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None, False
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "; comm may hold spaces
    return (fields[19] if len(fields) > 19 else None), (fields[0] == "Z" if fields else False)


_ME: dict[int, RunOwner] = {}


def this_process() -> RunOwner:
    """The :class:`RunOwner` this process records (a new one after ``fork``)."""
    pid = os.getpid()
    if pid not in _ME:
        _ME.clear()
        _ME[pid] = RunOwner(
            host=socket.gethostname(),
            pid=pid,
            token=uuid.uuid4().hex,
            proc_start=_proc_start(pid)[0],
        )
    return _ME[pid]


def owner_status(owner: RunOwner | None) -> OwnerStatus:
    """alive, gone (or never recorded), or unknown (another host: its pids cannot be checked)."""
    if owner is None:
        return "gone"
    me = this_process()
    if owner.host != me.host:
        return "unknown"
    if owner.pid == me.pid:
        return "alive" if owner.token == me.token else "gone"
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        pass  # exists, another user's
    except OSError:
        return "unknown"
    start, zombie = _proc_start(owner.pid)
    if zombie or (owner.proc_start and start and start != owner.proc_start):
        return "gone"
    return "alive"


class RunSummary(Frozen):
    run_id: str
    workflow: str
    status: RunStatus
    engine: str
    reason: str = ""
    created_ts: float
    updated_ts: float
    finished_ts: float | None = None
    parent_run_id: str | None = None
    forked_at: str | None = None
    owner: RunOwner | None = None
    """The process that drives a RUNNING run; None otherwise (and for runs stored before owners were)."""
    owner_status: OwnerStatus = ""
    """For a RUNNING run, whether its owner still runs (computed when read); '' for other statuses."""

    @property
    def stopped(self) -> bool:
        """RUNNING in the store, but the process that ran it is gone: only a resume continues it."""
        return self.status == RunStatus.RUNNING and self.owner_status == "gone"

    def status_label(self, hint: bool = True) -> str:
        """The status as people read it: a RUNNING run says when its process is gone or cannot be checked."""
        if self.status != RunStatus.RUNNING or self.owner_status in ("", "alive"):
            return self.status.value
        if self.owner_status == "gone":
            return "RUNNING (stopped: process gone" + (
                f" — workbench resume {self.run_id})" if hint else ")"
            )
        where = self.owner.host if self.owner else "another host"
        return f"RUNNING (owner on {where}: unknown)"


def _with_owner(values: dict[str, Any], owner: RunOwner | None) -> dict[str, Any]:
    running = values["status"] in (RunStatus.RUNNING, RunStatus.RUNNING.value)
    return {
        **values,
        "owner": owner if running else None,
        "owner_status": owner_status(owner) if running else "",
    }


class RunRecord(RunSummary):
    source: str
    definition: WorkflowDefinition
    engine_reason: str = ""
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, Any] = Field(default_factory=dict)
    engine_state: dict[str, Any] = Field(default_factory=dict)
    """What an engine needs to resume besides step results (budget counters, active detour)."""


class StepIteration(Frozen):
    iteration: int
    status: StepStatus
    outputs: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""


class StepResult(Frozen):
    """The latest state of one step, plus every iteration it has settled (loops)."""

    step_id: str
    status: StepStatus
    iteration: int = 0
    outputs: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""
    """Why it was skipped, or the error it failed with."""
    routed_by: list[str] = Field(default_factory=list)
    not_routed_by: list[str] = Field(default_factory=list)
    runs: int = 0
    """How many times the step has been started (all iterations and retries)."""
    history: list[StepIteration] = Field(default_factory=list)


class InterruptRecord(Frozen):
    interrupt_id: str
    run_id: str
    step_id: str
    iteration: int = 0
    request: InterruptRequest
    status: Literal["pending", "answered", "resolved"] = "pending"
    """pending: nobody has answered; answered: an answer is stored (``record_answer``)
    and the engine has not consumed it yet; resolved: the engine acted on it."""
    answer: InterruptAnswer | None = None
    created_ts: float = 0.0
    resolved_ts: float | None = None


def new_run_id() -> str:
    """Sortable by creation time, unique without coordination."""
    return f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


class BaseRunStore(ABC):
    """Seq/time stamping, batching and fan-out, shared by both stores."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._seq: dict[str, int] = {}
        self._mono_base: dict[str, float] = {}
        self._batch_depth = 0
        self._batch_owner: int | None = None
        self._unpublished: list[RunEvent] = []
        self.bus = EventBus(backlog=self.events)

    # -- storage primitives, one implementation per backend -----------------
    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _commit(self) -> None: ...

    @abstractmethod
    def _rollback(self) -> None: ...

    @abstractmethod
    def _last_event(self, run_id: str) -> tuple[int, float]:
        """(highest seq, its mono) of a stored run, (0, 0.0) when it has none."""

    @abstractmethod
    def _write_event(self, event: RunEvent) -> None: ...

    @abstractmethod
    def _insert_run(self, record: RunRecord) -> None: ...

    @abstractmethod
    def _update_run(self, run_id: str, values: dict[str, Any]) -> None: ...

    @abstractmethod
    def _write_engine_state(
        self, run_id: str, state: dict[str, Any], updated_ts: float
    ) -> None: ...

    @abstractmethod
    def _write_step(self, run_id: str, result: StepResult) -> None: ...

    @abstractmethod
    def _write_journal(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None: ...

    @abstractmethod
    def _write_interrupt(self, record: InterruptRecord) -> None: ...

    @abstractmethod
    def _read_owner(self, run_id: str) -> RunOwner | None: ...

    @abstractmethod
    def _write_owner(self, run_id: str, owner: RunOwner | None) -> None:
        """Record ``owner`` for the run (None: delete the row)."""

    # -- reads, one implementation per backend ------------------------------
    @abstractmethod
    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]: ...

    @abstractmethod
    def list_runs(self, limit: int = 50) -> list[RunSummary]: ...

    @abstractmethod
    def get_run(self, run_id: str) -> RunRecord: ...

    @abstractmethod
    def step_results(self, run_id: str) -> dict[str, StepResult]: ...

    @abstractmethod
    def journal_get(
        self, run_id: str, step_id: str, iteration: int, index: int
    ) -> JournalEntry | None: ...

    @abstractmethod
    def interrupts(self, run_id: str) -> list[InterruptRecord]: ...

    @abstractmethod
    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None: ...

    # -- transactions --------------------------------------------------------
    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group writes into one commit; events are fanned out after it.

        Keep the body synchronous (no ``await``): the writer lock is held for
        the whole batch.
        """
        if self._batch_depth and self._batch_owner == threading.get_ident():
            yield
            return
        with self._lock:
            self._begin()
            self._batch_owner = threading.get_ident()
            self._batch_depth = 1
            try:
                yield
            except BaseException:
                self._batch_depth = 0
                self._batch_owner = None
                self._rollback()
                for event in self._unpublished:
                    self._seq.pop(event.run_id, None)
                self._unpublished = []
                raise
            self._batch_depth = 0
            self._batch_owner = None
            self._commit()
            published, self._unpublished = self._unpublished, []
        self.bus.publish(published)

    def _write(self, write: Callable[[], _T]) -> _T:
        """Run ``write`` inside the current batch, or in a batch of its own."""
        if self._batch_depth and self._batch_owner == threading.get_ident():
            return write()
        with self.batch():
            return write()

    # -- writes ---------------------------------------------------------------
    def create_run(
        self,
        wf: WorkflowDefinition,
        inputs: dict[str, Any],
        engine: str,
        engine_reason: str,
        run_id: str | None = None,
        parent: str | None = None,
        forked_at: str | None = None,
    ) -> str:
        run_id = run_id or new_run_id()
        now = time.time()
        record = RunRecord(
            run_id=run_id,
            workflow=wf.name,
            status=RunStatus.RUNNING,
            engine=engine,
            created_ts=now,
            updated_ts=now,
            parent_run_id=parent,
            forked_at=forked_at,
            source=wf.source,
            definition=wf,
            engine_reason=engine_reason,
            inputs=inputs,
        )
        with self.batch():
            self._insert_run(record)
            self._write_owner(run_id, this_process().model_copy(update={"claimed_ts": now}))
        return run_id

    def claim_owner(self, run_id: str) -> None:
        """Record this process as the one driving ``run_id``; :class:`RunOwned` when another live
        process already does (checked and written in one transaction)."""
        with self.batch():
            current = self._read_owner(run_id)
            me = this_process()
            if (
                current is not None
                and current.token != me.token
                and owner_status(current) == "alive"
            ):
                raise RunOwned(
                    f"run {run_id} is running in another process ({current.describe()}); "
                    "not resuming it twice",
                    run_id,
                )
            self._write_owner(run_id, me.model_copy(update={"claimed_ts": time.time()}))

    def release_owner(self, run_id: str) -> None:
        """Forget this process as the run's owner (nothing when another process owns it)."""
        with self.batch():
            current = self._read_owner(run_id)
            if current is not None and current.token == this_process().token:
                self._write_owner(run_id, None)

    def append(self, event: RunEvent) -> RunEvent:
        """Stamp ``event`` with the run's next seq, wall time and monotonic offset; store it.

        Outside a batch it is committed and fanned out before this returns.
        """
        return self._write(lambda: self._stamp_and_write(event))

    def _stamp_and_write(self, event: RunEvent) -> RunEvent:
        run_id = event.run_id
        if run_id not in self._seq:
            last_seq, last_mono = self._last_event(run_id)
            self._seq[run_id] = last_seq
            self._mono_base[run_id] = time.monotonic() - last_mono
        self._seq[run_id] += 1
        stamped = event.model_copy(  # the event was validated when built; only the stamps are new
            update={
                "seq": self._seq[run_id],
                "ts": time.time(),
                "mono": time.monotonic() - self._mono_base[run_id],
            }
        )
        self._write_event(stamped)
        self._unpublished.append(stamped)
        return stamped

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        reason: str = "",
        outputs: dict[str, Any] | None = None,
    ) -> None:
        now = time.time()
        values: dict[str, Any] = {"status": status.value, "reason": reason, "updated_ts": now}
        values["finished_ts"] = now if status.final else None
        if outputs is not None:
            values["outputs"] = outputs

        def write() -> None:
            self._update_run(run_id, values)
            if status != RunStatus.RUNNING:
                self._write_owner(run_id, None)

        self._write(write)

    def save_engine_state(self, run_id: str, state: dict[str, Any]) -> None:
        """Store what resume needs besides the step results; written with every step transition."""
        updated_ts = time.time()
        self._write(lambda: self._write_engine_state(run_id, state, updated_ts))

    def save_step(self, run_id: str, result: StepResult) -> None:
        """Store the latest state of a step; a settled one also becomes its iteration's history row."""
        self._write(lambda: self._write_step(run_id, result))

    def journal_put(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        self._write(lambda: self._write_journal(run_id, step_id, iteration, index, entry))

    def add_interrupt(self, record: InterruptRecord) -> None:
        self._write(lambda: self._write_interrupt(record))

    def record_answer(self, interrupt_id: str, answer: InterruptAnswer) -> InterruptRecord:
        """Store an answer to an interrupt; the engine consumes it (and announces it
        with ``interrupt_resolved``) when the run resumes."""
        with self.batch():
            record = self.get_interrupt(interrupt_id)
            if record is None:
                raise LookupError(f"no interrupt {interrupt_id!r} in the run store")
            resolved = record.model_copy(
                update={"status": "answered", "answer": answer, "resolved_ts": time.time()}
            )
            self._write_interrupt(resolved)
        return resolved

    def pending_interrupts(self, run_id: str) -> list[InterruptRecord]:
        return [record for record in self.interrupts(run_id) if record.status == "pending"]

    def subscribe(self, callback: BatchCallback, run_id: str | None = None) -> Unsubscribe:
        """Receive batches of committed events (see engine/bus.py)."""
        return self.bus.subscribe(callback, run_id)

    def close(self) -> None:
        self.bus.close()

    def __enter__(self: _Store) -> _Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ``engine_states`` holds the resume state written with every step transition. It has
# its own small row: an update rewrites the whole row, and the ``runs`` row carries the
# definition and its source (a large workflow's makes every per-step commit a large one).
# ``runs.engine_state`` is read when a run has no row there (files written before).
SCHEMA_VERSION = 1
"""Stamped into the file (``PRAGMA user_version``); a file with a higher one is refused."""
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

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self._db = open_sqlite_file(
            self.path, "run store", schema=_SCHEMA, version=SCHEMA_VERSION, isolation_level=None
        )

    def _begin(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        self._db.execute("COMMIT")

    def _rollback(self) -> None:
        self._db.execute("ROLLBACK")

    def _last_event(self, run_id: str) -> tuple[int, float]:
        row = self._db.execute(
            "SELECT seq, mono FROM events WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (run_id,)
        ).fetchone()
        return (int(row[0]), float(row[1])) if row else (0, 0.0)

    def _write_event(self, event: RunEvent) -> None:
        self._db.execute(
            "INSERT INTO events (run_id, seq, kind, mono, body) VALUES (?, ?, ?, ?, ?)",
            (event.run_id, event.seq, event.kind, event.mono, event.model_dump_json()),
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
        cursor = self._db.execute(
            "INSERT OR REPLACE INTO engine_states (run_id, engine_state, updated_ts)"
            " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = ?)",
            (run_id, _dumps(state), updated_ts, run_id),
        )
        if cursor.rowcount == 0:
            raise UnknownRun(run_id)

    def _write_step(self, run_id: str, result: StepResult) -> None:
        outputs = _dumps(result.outputs)
        self._db.execute(
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
            self._db.execute(
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
            "SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq", (run_id, after_seq)
        )
        return [event_from_json(row[0]) for row in rows]

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
        return _with_owner(values, owner)

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

    def get_run(self, run_id: str) -> RunRecord:
        rows = self._query(f"{_RUN_SELECT} WHERE r.run_id = ?", (run_id,))
        if not rows:
            raise UnknownRun(run_id)
        values = self._run_row(rows[0])
        values["definition"] = WorkflowDefinition.model_validate_json(values["definition"])
        return RunRecord.model_validate(values)

    def step_results(self, run_id: str) -> dict[str, StepResult]:
        history: dict[str, list[StepIteration]] = {}
        for step_id, iteration, status, outputs, reason in self._query(
            "SELECT step_id, iteration, status, outputs, reason FROM step_history WHERE run_id = ?"
            " ORDER BY step_id, iteration",
            (run_id,),
        ):
            history.setdefault(step_id, []).append(
                StepIteration(
                    iteration=iteration,
                    status=StepStatus(status),
                    outputs=json.loads(outputs),
                    reason=reason,
                )
            )
        results: dict[str, StepResult] = {}
        for (
            step_id,
            status,
            iteration,
            outputs,
            reason,
            routed_by,
            not_routed_by,
            runs,
        ) in self._query(
            "SELECT step_id, status, iteration, outputs, reason, routed_by, not_routed_by, runs"
            " FROM step_results WHERE run_id = ?",
            (run_id,),
        ):
            results[step_id] = StepResult(
                step_id=step_id,
                status=StepStatus(status),
                iteration=iteration,
                outputs=json.loads(outputs),
                reason=reason,
                routed_by=json.loads(routed_by),
                not_routed_by=json.loads(not_routed_by),
                runs=runs,
                history=history.get(step_id, []),
            )
        return results

    def journal_get(
        self, run_id: str, step_id: str, iteration: int, index: int
    ) -> JournalEntry | None:
        rows = self._query(
            "SELECT kind, payload FROM journal WHERE run_id = ? AND step_id = ? AND iteration = ? AND call_index = ?",
            (run_id, step_id, iteration, index),
        )
        return JournalEntry(kind=rows[0][0], payload=json.loads(rows[0][1])) if rows else None

    def _interrupt_from_row(self, row: tuple[Any, ...]) -> InterruptRecord:
        (
            interrupt_id,
            run_id,
            step_id,
            iteration,
            request,
            status,
            answer,
            created_ts,
            resolved_ts,
        ) = row
        return InterruptRecord(
            interrupt_id=interrupt_id,
            run_id=run_id,
            step_id=step_id,
            iteration=iteration,
            request=InterruptRequest.model_validate_json(request),
            status=status,
            answer=InterruptAnswer.model_validate_json(answer) if answer else None,
            created_ts=created_ts,
            resolved_ts=resolved_ts,
        )

    _INTERRUPT_COLUMNS = (
        "interrupt_id, run_id, step_id, iteration, request, status, answer, created_ts, resolved_ts"
    )

    def interrupts(self, run_id: str) -> list[InterruptRecord]:
        rows = self._query(
            f"SELECT {self._INTERRUPT_COLUMNS} FROM interrupts WHERE run_id = ? ORDER BY created_ts, interrupt_id",
            (run_id,),
        )
        return [self._interrupt_from_row(row) for row in rows]

    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        rows = self._query(
            f"SELECT {self._INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = ?",
            (interrupt_id,),
        )
        return self._interrupt_from_row(rows[0]) if rows else None

    def close(self) -> None:
        super().close()
        with self._lock:
            self._db.close()


class InMemoryRunStore(BaseRunStore):
    """The same API held in dicts: no durability, no commit cost (benchmarks, unit tests)."""

    def __init__(self) -> None:
        super().__init__()
        self._runs: dict[str, dict[str, Any]] = {}
        self._events: dict[str, list[RunEvent]] = {}
        self._steps: dict[str, dict[str, StepResult]] = {}
        self._history: dict[tuple[str, str], dict[int, StepIteration]] = {}
        self._journal: dict[tuple[str, str, int, int], JournalEntry] = {}
        self._interrupts: dict[str, InterruptRecord] = {}
        self._owners: dict[str, RunOwner] = {}

    def _read_owner(self, run_id: str) -> RunOwner | None:
        return self._owners.get(run_id)

    def _write_owner(self, run_id: str, owner: RunOwner | None) -> None:
        if owner is None:
            self._owners.pop(run_id, None)
        else:
            self._owners[run_id] = owner

    def _begin(self) -> None:
        return None

    def _commit(self) -> None:
        return None

    def _rollback(self) -> None:
        """In memory, writes apply at once and a failed batch keeps them; seqs stay
        contiguous because the counter is re-read from the stored events."""
        return None

    def _last_event(self, run_id: str) -> tuple[int, float]:
        events = self._events.get(run_id)
        return (events[-1].seq, events[-1].mono) if events else (0, 0.0)

    def _write_event(self, event: RunEvent) -> None:
        self._events.setdefault(event.run_id, []).append(event)

    def _insert_run(self, record: RunRecord) -> None:
        self._runs[record.run_id] = {
            **record.model_dump(exclude={"definition"}),
            "definition": record.definition,
        }

    def _update_run(self, run_id: str, values: dict[str, Any]) -> None:
        if run_id not in self._runs:
            raise UnknownRun(run_id)
        self._runs[run_id].update(values)

    def _write_engine_state(self, run_id: str, state: dict[str, Any], updated_ts: float) -> None:
        self._update_run(run_id, {"engine_state": state, "updated_ts": updated_ts})

    def _write_step(self, run_id: str, result: StepResult) -> None:
        self._steps.setdefault(run_id, {})[result.step_id] = result
        if result.status.settled:
            self._history.setdefault((run_id, result.step_id), {})[result.iteration] = (
                StepIteration(
                    iteration=result.iteration,
                    status=result.status,
                    outputs=result.outputs,
                    reason=result.reason,
                )
            )

    def _write_journal(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        self._journal[(run_id, step_id, iteration, index)] = entry

    def _write_interrupt(self, record: InterruptRecord) -> None:
        self._interrupts[record.interrupt_id] = record

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        with self._lock:
            return [event for event in self._events.get(run_id, []) if event.seq > after_seq]

    def list_runs(self, limit: int = 50) -> list[RunSummary]:
        runs = sorted(
            self._runs.values(), key=lambda r: (r["created_ts"], r["run_id"]), reverse=True
        )[:limit]
        return [
            RunSummary.model_validate(
                {
                    k: v
                    for k, v in _with_owner(r, self._owners.get(r["run_id"])).items()
                    if k in RunSummary.model_fields
                }
            )
            for r in runs
        ]

    def get_run(self, run_id: str) -> RunRecord:
        if run_id not in self._runs:
            raise UnknownRun(run_id)
        return RunRecord.model_validate(_with_owner(self._runs[run_id], self._owners.get(run_id)))

    def step_results(self, run_id: str) -> dict[str, StepResult]:
        results = {}
        for step_id, result in self._steps.get(run_id, {}).items():
            history = self._history.get((run_id, step_id), {})
            results[step_id] = result.model_copy(
                update={"history": [history[i] for i in sorted(history)]}
            )
        return results

    def journal_get(
        self, run_id: str, step_id: str, iteration: int, index: int
    ) -> JournalEntry | None:
        return self._journal.get((run_id, step_id, iteration, index))

    def interrupts(self, run_id: str) -> list[InterruptRecord]:
        return [record for record in self._interrupts.values() if record.run_id == run_id]

    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        return self._interrupts.get(interrupt_id)
