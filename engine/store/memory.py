"""The run store's API held in dicts: no durability, no commit cost (benchmarks, unit tests).

Events and step results are kept as their JSON, as the SQLite store keeps them, and read
back as new objects: a reader never shares an object with the engine, and a long run's
record is a few strings per step rather than a tree of models the cycle collector walks
through on every full collection (which made a 10,000-step run's cost per step grow).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from typing import Any

from engine.context import JournalEntry
from engine.events import RunEvent, event_from_json
from engine.states import SETTLED
from engine.store.base import BaseRunStore
from engine.store.ownership import RunOwner, with_owner_status
from engine.store.records import (
    InterruptRecord,
    OwnRow,
    RunInputs,
    RunRecord,
    RunSummary,
    StepIteration,
    StepResult,
    UnknownRun,
)
from engine.trusted import Deferred, json_bytes


class InMemoryRunStore(BaseRunStore):
    """The same API held in dicts: no durability, no commit cost (benchmarks, unit tests)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(clock=clock, monotonic=monotonic)
        self._runs: dict[str, dict[str, Any]] = {}
        self._events: dict[str, list[tuple[int, bytes]]] = {}
        """Per run, (seq, the event's JSON) in seq order."""
        self._last: dict[str, tuple[int, float]] = {}
        """Per run, the seq and mono of its last event."""
        self._steps: dict[str, dict[str, bytes]] = {}
        """Per run, per step, its latest StepResult's JSON."""
        self._history: dict[tuple[str, str], dict[int, bytes]] = {}
        """Per (run, step), per settled iteration, the JSON of the StepResult that settled it."""
        self._journal: dict[tuple[str, str, int, int], JournalEntry] = {}
        self._interrupts: dict[str, InterruptRecord] = {}
        self._owners: dict[str, RunOwner] = {}
        self._epochs: dict[str, int] = {}

    def _read_owner(self, run_id: str) -> RunOwner | None:
        return self._owners.get(run_id)

    def _write_owner(self, run_id: str, owner: RunOwner | None) -> None:
        if owner is None:
            self._owners.pop(run_id, None)
        else:
            self._owners[run_id] = owner

    def _read_epoch(self, run_id: str) -> int | None:
        return self._epochs.get(run_id)

    def _next_epoch(self, run_id: str, holder: str, claimed_ts: float) -> int:
        self._epochs[run_id] = self._epochs.get(run_id, 0) + 1
        return self._epochs[run_id]

    def _begin(self) -> None:
        return None

    def _commit(self) -> None:
        return None

    def _rollback(self) -> None:
        """In memory, writes apply at once and a failed batch keeps them; seqs stay
        contiguous because the counter is re-read from the stored events."""
        return None

    def _last_event(self, run_id: str) -> tuple[int, float]:
        return self._last.get(run_id, (0, 0.0))

    def _write_event(self, event: RunEvent) -> None:
        self._events.setdefault(event.run_id, []).append((event.seq, json_bytes(event)))
        self._last[event.run_id] = (event.seq, event.mono)

    def _write_new(self, event: Deferred[RunEvent]) -> None:
        """:meth:`_write_event` of the model ``event`` would build, from its fields."""
        fields = event.fields
        run_id, seq = fields["run_id"], fields["seq"]
        self._events.setdefault(run_id, []).append((seq, event.json()))
        self._last[run_id] = (seq, fields["mono"])

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
        stored = json_bytes(result)
        self._steps.setdefault(run_id, {})[result.step_id] = stored
        if result.status.settled:  # the iteration's history row: read from the same JSON
            self._history.setdefault((run_id, result.step_id), {})[result.iteration] = stored

    def _write_row(self, run_id: str, row: OwnRow) -> None:
        """:meth:`_write_step` of ``row.model()``, from the row's fields."""
        fields = row.fields
        step_id, stored = fields["step_id"], row.json()
        self._steps.setdefault(run_id, {})[step_id] = stored
        if fields["status"] in _SETTLED:
            self._history.setdefault((run_id, step_id), {})[fields["iteration"]] = stored

    def _write_alike(self, run_id: str, first: StepResult, step_ids: Iterable[str]) -> None:
        """The rows' JSON made from ``first``'s, its step id (the first field) replaced: a
        new run's start writes one per step, and this is a tenth of building and encoding
        each. Settled rows (each its history row too) are written one by one."""
        stored = json_bytes(first)
        lead = _STEP_ID_KEY + _json_string(first.step_id)
        if first.status.settled or not stored.startswith(lead):
            super()._write_alike(run_id, first, step_ids)
            return
        steps = self._steps.setdefault(run_id, {})
        steps[first.step_id] = stored
        rest = stored[len(lead) :]
        for step_id in step_ids:
            # _json_string written out: once for each step of a new run
            steps[step_id] = _STEP_ID_KEY + encode_basestring(step_id).encode() + rest

    def _write_journal(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        self._journal[(run_id, step_id, iteration, index)] = entry

    def _write_interrupt(self, record: InterruptRecord) -> None:
        self._interrupts[record.interrupt_id] = record

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        with self._lock:
            return [
                event_from_json(text)
                for seq, text in self._events.get(run_id, [])
                if seq > after_seq
            ]

    def last_event(self, run_id: str, kind: str) -> RunEvent | None:
        with self._lock:
            stored = list(self._events.get(run_id, []))
        for _, text in reversed(stored):
            event = event_from_json(text)
            if event.kind == kind:
                return event
        return None

    def _newest(self, limit: int) -> list[dict[str, Any]]:
        return sorted(
            self._runs.values(), key=lambda r: (r["created_ts"], r["run_id"]), reverse=True
        )[:limit]

    def list_runs(self, limit: int = 50) -> list[RunSummary]:
        runs = self._newest(limit)
        return [
            RunSummary.model_validate(
                {
                    k: v
                    for k, v in with_owner_status(r, self._owners.get(r["run_id"])).items()
                    if k in RunSummary.model_fields
                }
            )
            for r in runs
        ]

    def list_runs_with_inputs(self, limit: int = 50) -> list[RunInputs]:
        runs = []
        for record in (self.get_run(run["run_id"]) for run in self._newest(limit)):
            runs.append(
                RunInputs.model_validate(
                    {k: getattr(record, k) for k in RunSummary.model_fields}
                    | {"inputs": record.inputs, "declared_inputs": list(record.definition.inputs)}
                )
            )
        return runs

    def get_run(self, run_id: str) -> RunRecord:
        if run_id not in self._runs:
            raise UnknownRun(run_id)
        return RunRecord.model_validate(
            with_owner_status(self._runs[run_id], self._owners.get(run_id))
        )

    def step_results(self, run_id: str) -> dict[str, StepResult]:
        results = {}
        for step_id, result in self._steps.get(run_id, {}).items():
            history = self._history.get((run_id, step_id), {})
            results[step_id] = StepResult.model_validate_json(result).model_copy(
                update={"history": [_iteration(history[i]) for i in sorted(history)]}
            )
        return results

    def journal_get(
        self, run_id: str, step_id: str, iteration: int, index: int
    ) -> JournalEntry | None:
        return self._journal.get((run_id, step_id, iteration, index))

    def journal_entries(
        self, run_id: str, step_id: str, iteration: int
    ) -> list[tuple[int, JournalEntry]]:
        return sorted(
            (
                (index, entry)
                for (run, step, it, index), entry in self._journal.items()
                if (run, step, it) == (run_id, step_id, iteration)
            ),
            key=lambda pair: pair[0],
        )

    def journal_of(self, run_id: str) -> list[tuple[str, int, int, JournalEntry]]:
        return sorted(
            (step, it, index, entry)
            for (run, step, it, index), entry in self._journal.items()
            if run == run_id
        )

    def interrupts(self, run_id: str) -> list[InterruptRecord]:
        return [record for record in self._interrupts.values() if record.run_id == run_id]

    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        return self._interrupts.get(interrupt_id)


_SETTLED = frozenset(status.value for status in SETTLED)
"""The settled statuses as a row's fields hold them (:class:`OwnRow`)."""

_STEP_ID_KEY = b'{"step_id":'
"""How a StepResult's JSON begins: its first field."""


def _json_string(text: str) -> bytes:
    """``text`` as pydantic's JSON writes a string (UTF-8; quotes, backslashes and control
    characters escaped alike)."""
    return encode_basestring(text).encode()


def _iteration(stored: bytes) -> StepIteration:
    result = StepResult.model_validate_json(stored)
    return StepIteration(
        iteration=result.iteration,
        status=result.status,
        outputs=result.outputs,
        reason=result.reason,
    )
