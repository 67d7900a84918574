"""Seq/time stamping, batching and fan-out, shared by both run stores (see the package's
docstring for the durability rules)."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from engine.bus import BatchCallback, EventBus, Unsubscribe
from engine.context import InterruptAnswer, JournalEntry
from engine.events import RunEvent
from engine.spec import WorkflowDefinition
from engine.states import RunStatus
from engine.store.lease import LeaseLost
from engine.store.ownership import (
    RunFinishedMeanwhile,
    RunOwned,
    RunOwner,
    owner_status,
    this_process,
)
from engine.store.records import (
    InterruptClosed,
    InterruptRecord,
    OwnRow,
    RunInputs,
    RunRecord,
    RunSummary,
    StepResult,
    new_run_id,
)
from engine.trusted import Deferred, replaced

_T = TypeVar("_T")
_Event = TypeVar("_Event", bound=RunEvent)
_Store = TypeVar("_Store", bound="BaseRunStore")


class _Batch(AbstractContextManager[None]):
    """An outer batch of :meth:`BaseRunStore.batch`: a class rather than a generator (one
    is opened per step; a generator's context manager costs twice as much). It holds no
    state of its own — the open transaction's is the store's — so each store keeps one and
    hands it out for every outer batch, on any thread."""

    __slots__ = ("_store",)

    def __init__(self, store: BaseRunStore) -> None:
        self._store = store

    def __enter__(self) -> None:
        """Take the writer lock and open a transaction."""
        store = self._store
        store._lock.acquire()
        try:
            store._begin()
        except BaseException as error:
            store._lock.release()
            failure = store._write_failure(error) if isinstance(error, Exception) else None
            if failure is None:
                raise
            raise failure from error
        store._batch_owner = threading.get_ident()
        store._batch_depth = 1

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        """Commit the open transaction (``error`` None) or roll it back and raise, then
        release the writer lock; the committed events are fanned out after it."""
        store = self._store
        try:
            try:
                if error is not None:
                    raise error
                store._batch_depth = 0
                store._batch_owner = None
                store._fenced.clear()
                try:
                    store._commit()
                except Exception as failed:
                    failure = store._write_failure(failed)
                    if failure is None:
                        raise
                    raise failure from failed
            except BaseException as failed:
                store._batch_depth = 0
                store._batch_owner = None
                store._fenced.clear()
                store._rollback()
                for event in store._unpublished:
                    store._seq.pop(_model(event).run_id, None)
                store._unpublished = []
                failure = store._write_failure(failed)
                if failure is not None and failure is not failed:
                    raise failure from failed
                raise
            published, store._unpublished = store._unpublished, []
        finally:
            store._lock.release()
        if published and store.bus.subscribed():
            store.bus.publish([_model(event) for event in published])


class BaseRunStore(ABC):
    """Seq/time stamping, batching and fan-out, shared by both stores."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        """Wall time stamped on runs, events and interrupts (a fixed one makes stored times
        reproducible: the README's screenshots)."""
        self._monotonic = monotonic
        """Where events' ``mono`` (seconds into the run) is read."""
        self._lock = threading.RLock()
        self._seq: dict[str, int] = {}
        self._mono_base: dict[str, float] = {}
        self._batch_depth = 0
        self._batch_owner: int | None = None
        self._unpublished: list[RunEvent | Deferred[RunEvent]] = []
        """The open transaction's events, published after its commit: an event of the engine's
        own values (:meth:`append_new`) as it was appended, its model built only for a
        subscriber."""
        self._leases: dict[str, int] = {}
        """The lease epoch this store claimed, per run (engine/store/lease.py)."""
        self._fenced: set[str] = set()
        """Runs whose lease the open transaction has checked."""
        self.bus = EventBus(backlog=self.events)
        self._outer = _Batch(self)
        """What :meth:`batch` returns for an outer batch (it keeps no state of its own)."""

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

    def _write_new(self, event: Deferred[RunEvent]) -> None:
        """Store an event of :meth:`append_new`: its model through :meth:`_write_event`, unless
        the store writes it from its fields (the in-memory store keeps its JSON)."""
        self._write_event(event.model())

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

    def _write_row(self, run_id: str, row: OwnRow) -> None:
        """Store a row of :meth:`save_row`: its model through :meth:`_write_step`, unless the
        store writes it from its fields (the in-memory store keeps its JSON)."""
        self._write_step(run_id, row.model())

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

    @abstractmethod
    def _read_epoch(self, run_id: str) -> int | None:
        """The run's current lease epoch (None: never claimed), read so that no claim can
        change it before the open transaction ends."""

    @abstractmethod
    def _next_epoch(self, run_id: str, holder: str, claimed_ts: float) -> int:
        """Increment the run's lease epoch (1 for its first claim) and return it."""

    # -- reads, one implementation per backend ------------------------------
    @abstractmethod
    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]: ...

    @abstractmethod
    def last_event(self, run_id: str, kind: str) -> RunEvent | None:
        """The run's latest event of ``kind`` (None when it has none): resume reads the
        counters of its last ``budget`` event (engine/run_state.py, ``RunState.restore``)."""

    @abstractmethod
    def list_runs(self, limit: int = 50) -> list[RunSummary]: ...

    @abstractmethod
    def list_runs_with_inputs(self, limit: int = 50) -> list[RunInputs]:
        """The most recent runs as :meth:`list_runs` orders them, each with its inputs and the
        inputs its workflow declares, read together — for lists that show what each run was
        asked (no definition is validated, no run read one by one)."""

    @abstractmethod
    def get_run(self, run_id: str) -> RunRecord: ...

    @abstractmethod
    def step_results(self, run_id: str) -> dict[str, StepResult]: ...

    @abstractmethod
    def journal_get(
        self, run_id: str, step_id: str, iteration: int, index: int
    ) -> JournalEntry | None: ...

    @abstractmethod
    def journal_entries(
        self, run_id: str, step_id: str, iteration: int
    ) -> list[tuple[int, JournalEntry]]:
        """One step iteration's journaled calls as (call index, entry), in call order."""

    @abstractmethod
    def journal_of(self, run_id: str) -> list[tuple[str, int, int, JournalEntry]]:
        """Every journaled call of a run as (step, iteration, call index, entry), in that order."""

    @abstractmethod
    def interrupts(self, run_id: str) -> list[InterruptRecord]: ...

    @abstractmethod
    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None: ...

    # -- transactions --------------------------------------------------------
    def batch(self) -> AbstractContextManager[object]:
        """Group writes into one commit; events are fanned out after it.

        Keep the body synchronous (no ``await``): the writer lock is held for
        the whole batch. A batch opened inside one of the same thread joins it: the outer one
        commits, and the inner one only takes the writer lock once more, which this thread
        holds (the engine nests them several times a step, so that case costs only this check
        and the lock's count, with no call in Python).
        """
        if self._batch_depth and self._batch_owner == threading.get_ident():
            return self._lock
        return self._outer

    def _write_failure(self, error: BaseException) -> Exception | None:
        """The typed error a storage failure is reported as (None: not a storage failure)."""
        return None

    def _write(self, run_id: str, write: Callable[..., _T], *args: Any) -> _T:
        """Run ``write(*args)`` of ``run_id`` inside the current batch, or in a batch of its
        own, after checking this store's lease on the run."""
        if self._batch_depth and self._batch_owner == threading.get_ident():
            if self._leases:  # nothing to check for a store that claimed no lease
                self._fence(run_id)
            return write(*args)
        with self.batch():
            self._fence(run_id)
            return write(*args)

    def _fence(self, run_id: str) -> None:
        """Check, once per transaction, that the lease this store claimed on ``run_id`` is
        still current (nothing to check for a run it never claimed): :class:`LeaseLost`."""
        held = self._leases.get(run_id)
        if held is None or run_id in self._fenced:
            return
        current = self._read_epoch(run_id)
        if current != held:
            raise LeaseLost(run_id, held, current)
        self._fenced.add(run_id)

    def claim(self, run_id: str) -> int:
        """Take the run's lease: increment its epoch and return it. From now on every write
        of this store to the run checks, in its transaction, that the epoch is still this one
        (:class:`LeaseLost` otherwise). :class:`UnknownRun` when there is no such run."""
        with self.batch():
            self.get_run(run_id)
            epoch = self._next_epoch(run_id, this_process().describe(), self._clock())
        self._leases[run_id] = epoch
        self._seq.pop(run_id, None)  # the previous holder may have appended: read it again
        self._mono_base.pop(run_id, None)
        return epoch

    def lease_of(self, run_id: str) -> int | None:
        """The lease epoch this store claimed on the run (None: it never claimed it)."""
        return self._leases.get(run_id)

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
        now = self._clock()
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
            self._write_owner(run_id, replaced(this_process(), claimed_ts=now))
        return run_id

    def claim_owner(
        self, run_id: str, answers: Mapping[str, InterruptAnswer] | None = None
    ) -> None:
        """Record this process as the one driving ``run_id``, and ``answers`` (interrupt id →
        answer) as the answers to the run's open interrupts — checked and written in one
        transaction, so two processes resuming a WAITING run with different answers never
        mix them: the one that claims the run has its answers applied, the other is refused
        and stores nothing.

        :class:`RunOwned` when another live process drives the run (unless this store claimed
        the run's lease, which fences that process out),
        :class:`RunFinishedMeanwhile` when it has finished, :class:`UnknownRun` when there
        is no such run, LookupError when an interrupt id is not one of the run's.
        """
        with self.batch():
            self._fence(run_id)
            status = self.get_run(run_id).status
            if status.final:
                raise RunFinishedMeanwhile(
                    f"run {run_id} is {status.value}; only a RUNNING or WAITING run resumes"
                    f" — see workbench runs show {run_id}",
                    run_id,
                )
            current = self._read_owner(run_id)
            me = this_process()
            if (
                current is not None
                and current.token != me.token
                and run_id not in self._leases  # a lease fences the other owner out
                and owner_status(current) == "alive"
            ):
                raise RunOwned(
                    f"run {run_id} is running in another process ({current.describe()}); "
                    "not resuming it twice",
                    run_id,
                )
            for interrupt_id, answer in (answers or {}).items():
                record = self.get_interrupt(interrupt_id)
                if record is None or record.run_id != run_id:
                    raise LookupError(f"run {run_id} has no interrupt {interrupt_id!r}")
                if record.status != "resolved":
                    self._write_interrupt(
                        record.model_copy(
                            update={
                                "status": "answered",
                                "answer": answer,
                                "resolved_ts": self._clock(),
                            }
                        )
                    )
            self._write_owner(run_id, me.model_copy(update={"claimed_ts": self._clock()}))

    def release_owner(self, run_id: str) -> None:
        """Forget this process as the run's owner (nothing when another process owns it)."""
        with self.batch():
            self._fence(run_id)
            current = self._read_owner(run_id)
            if current is not None and current.token == this_process().token:
                self._write_owner(run_id, None)

    def append(self, event: RunEvent) -> RunEvent:
        """Stamp ``event`` with the run's next seq, wall time and monotonic offset; store it.

        Outside a batch it is committed and fanned out before this returns.
        """
        return self._write(event.run_id, self._stamp_and_write, event)

    def append_new(self, kind: type[RunEvent], **fields: Any) -> None:
        """``append(kind(**fields))`` for an event of the engine's own values (of the event's
        types: engine/trusted.py), stamped and not validated; its model is built only when
        something needs it (:class:`~engine.trusted.Deferred`: a store that writes models, a
        subscriber) — the engine appends three a step, so the open batch's case is written
        out here rather than through :meth:`_write`."""
        if not (self._batch_depth and self._batch_owner == threading.get_ident()):
            with self.batch():
                self.append_new(kind, **fields)
                return
        run_id = fields["run_id"]
        if self._leases:
            self._fence(run_id)
        seq = self._seq.get(run_id)
        if seq is None:  # the run's first event in this store: read where it stands
            fields["seq"], fields["ts"], fields["mono"] = self._stamps(run_id)
        else:  # _stamps' own steps, written out (three events a step)
            fields["seq"] = self._seq[run_id] = seq + 1
            fields["ts"] = self._clock()
            fields["mono"] = self._monotonic() - self._mono_base[run_id]
        event = Deferred(kind, fields)
        self._write_new(event)
        self._unpublished.append(event)

    def _stamp_and_write(self, event: RunEvent) -> RunEvent:
        seq, ts, mono = self._stamps(event.run_id)
        # the event was validated when built; only the stamps are new
        return self._written(replaced(event, seq=seq, ts=ts, mono=mono))

    def _stamps(self, run_id: str) -> tuple[int, float, float]:
        """The run's next seq, the wall time and the seconds since the run started."""
        if run_id not in self._seq:
            last_seq, last_mono = self._last_event(run_id)
            self._seq[run_id] = last_seq
            self._mono_base[run_id] = self._monotonic() - last_mono
        seq = self._seq[run_id] = self._seq[run_id] + 1
        return seq, self._clock(), self._monotonic() - self._mono_base[run_id]

    def _written(self, stamped: _Event) -> _Event:
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
        now = self._clock()
        values: dict[str, Any] = {"status": status.value, "reason": reason, "updated_ts": now}
        values["finished_ts"] = now if status.final else None
        if outputs is not None:
            values["outputs"] = outputs

        def write() -> None:
            self._update_run(run_id, values)
            if status != RunStatus.RUNNING:
                self._write_owner(run_id, None)

        self._write(run_id, write)

    def save_engine_state(self, run_id: str, state: dict[str, Any]) -> None:
        """Store what resume needs besides the step results and the counters of the run's last
        ``budget`` event (a step's settling writes this only when the rest changed:
        engine/recorder.py, ``RunRecorder.save_counters``)."""
        updated_ts = self._clock()
        self._write(run_id, self._write_engine_state, run_id, state, updated_ts)

    def save_step(self, run_id: str, result: StepResult) -> None:
        """Store the latest state of a step; a settled one also becomes its iteration's history row.

        Inside an open batch of this thread and with no lease to check — twice a step — it is
        written at once, as :meth:`append_new` writes an event, not through :meth:`_write`."""
        if self._batch_depth and self._batch_owner == threading.get_ident() and not self._leases:
            self._write_step(run_id, result)
        else:
            self._write(run_id, self._write_step, run_id, result)

    def save_row(self, run_id: str, row: OwnRow) -> None:
        """:meth:`save_step` of ``row.model()`` (a row of the step runner's own values,
        twice a step: :class:`~engine.store.records.OwnRow`), its model built only for a
        store that writes models."""
        if self._batch_depth and self._batch_owner == threading.get_ident() and not self._leases:
            self._write_row(run_id, row)
        else:
            self._write(run_id, self._write_row, run_id, row)

    def save_alike(self, run_id: str, first: StepResult, step_ids: Iterable[str]) -> None:
        """:meth:`save_step` of ``first`` and, for each of ``step_ids``, of ``first`` with that
        step id, in one write (a new run's start stores its steps' first rows, alike but for
        the step id)."""
        self._write(run_id, self._write_alike, run_id, first, step_ids)

    def _write_alike(self, run_id: str, first: StepResult, step_ids: Iterable[str]) -> None:
        write_step = self._write_step
        write_step(run_id, first)
        for step_id in step_ids:
            write_step(run_id, replaced(first, step_id=step_id))

    def journal_put(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        self._write(run_id, self._write_journal, run_id, step_id, iteration, index, entry)

    def add_interrupt(self, record: InterruptRecord) -> None:
        self._write(record.run_id, self._write_interrupt, record)

    def record_answer(self, interrupt_id: str, answer: InterruptAnswer) -> InterruptRecord:
        """Store an answer to a pending interrupt; the engine consumes it (and announces it
        with ``interrupt_resolved``) when the run resumes.

        Exactly one of answers racing to one prompt is stored: the check that it is pending
        and the write are one transaction holding the interrupt's row
        (:meth:`_interrupt_to_answer`); the others get :class:`InterruptClosed`."""
        with self.batch():
            record = self._interrupt_to_answer(interrupt_id)
            if record is None:
                raise LookupError(f"no interrupt {interrupt_id!r} in the run store")
            if record.status != "pending":
                raise InterruptClosed(record)
            self._fence(record.run_id)
            resolved = record.model_copy(
                update={"status": "answered", "answer": answer, "resolved_ts": self._clock()}
            )
            self._write_interrupt(resolved)
        return resolved

    def _interrupt_to_answer(self, interrupt_id: str) -> InterruptRecord | None:
        """The interrupt, read inside the open batch so that no other writer changes it
        before the batch commits. The batch itself excludes every other writer here (SQLite's
        ``BEGIN IMMEDIATE`` takes the file's write lock; the in-memory store has one lock);
        PostgreSQL locks the row (postgres.py)."""
        return self.get_interrupt(interrupt_id)

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


def _model(event: RunEvent | Deferred[RunEvent]) -> RunEvent:
    return event.model() if isinstance(event, Deferred) else event
