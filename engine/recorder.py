"""Writing a run's changes: every event and step record goes to the run store first.

The step runner, the interrupt asker and the route application all change one
run; they write through this one recorder, so a run resumes from the store alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar, cast

from engine.events import Budget, Domain, RunEvent, StepSkipped
from engine.run_state import RunState, StepRecord
from engine.states import StepStatus
from engine.store import BaseRunStore

_Event = TypeVar("_Event", bound=RunEvent)


class RunRecorder:
    """The run's state and the store it is written to."""

    def __init__(self, state: RunState, store: BaseRunStore) -> None:
        self.state = state
        self.store = store
        self.emit_new = store.append_new
        """Store a new event of the engine's own values, of the event's types — its validated
        outputs and inputs, its counters, its enums — stamped, not validated, its model built
        only when something needs it (engine/trusted.py, ``Deferred``): the store's own
        method, called a few times a step."""
        self.step_bound = state.wf.limits.step_run_bound(len(state.wf.steps))
        """The run's ``max_step_runs``, explicit or derived from the workflow's size."""
        self._stored_beyond: dict[str, Any] | None = None
        """``RunState.beyond_counters`` as this recorder last stored it (None: not yet)."""

    @property
    def run_id(self) -> str:
        return self.state.run_id

    def emit(self, event: _Event) -> _Event:
        """Store ``event`` (committed before anyone sees it); returns it stamped."""
        return cast(_Event, self.store.append(event))

    def emit_domain(self, name: str, payload: dict[str, Any], step_id: str | None) -> None:
        self.emit(Domain(run_id=self.run_id, name=name, payload=payload, step_id=step_id))

    def save(self, record: StepRecord) -> None:
        self.store.save_step(self.state.run_id, record.result())

    def save_own(self, record: StepRecord) -> None:
        """:meth:`save` of a record the step runner just moved itself (``own_row``)."""
        self.store.save_row(self.state.run_id, record.own_row())

    def save_new(self, records: Iterable[StepRecord]) -> None:
        """Save the first rows of a new run's steps, as :class:`RunState.fresh` made them:
        their results differ only in the step's id, so one is validated and the store copies
        it for the others (a run's start writes one per step)."""
        rows = iter(records)
        head = next(rows, None)
        if head is None:
            return
        self.store.save_alike(self.state.run_id, head.result(), (record.step_id for record in rows))

    def save_engine_state(self) -> None:
        state = self.state.engine_state()
        self.store.save_engine_state(self.run_id, state)
        self._stored_beyond = self.state.beyond_counters()

    def save_counters(self) -> None:
        """The run's ``budget`` event — its counters — and the engine state if what no
        ``budget`` event carries changed since it was last stored (a step's settling: the
        engine state's counters are then the event's, committed with it, and resume takes
        the later of the two, ``RunState.restore``). Most steps change only the counters: a
        step stores one row fewer."""
        state = self.state
        beyond = state.beyond_counters()
        if beyond is not self._stored_beyond and beyond != self._stored_beyond:
            self.save_engine_state()
        budget = state.budget
        self.emit_new(  # one a step: the run's own counters
            Budget,
            run_id=state.run_id,
            step_runs=state.step_runs,
            llm_calls=int(budget.llm_calls),
            tokens=int(budget.tokens),
            max_step_runs=self.step_bound,
            max_llm_calls=int(budget.max_llm_calls),
            token_budget=int(budget.token_budget),
            elapsed_s=round(float(state.elapsed_s), 6),
            cost_usd=float(budget.cost_usd),
            max_cost_usd=None if budget.max_cost_usd is None else float(budget.max_cost_usd),
        )

    def skip(self, record: StepRecord, reason: str) -> None:
        """Settle ``record`` SKIPPED and announce it (the caller saves it)."""
        record.settle(StepStatus.SKIPPED, reason=reason)
        self.emit_new(
            StepSkipped,
            run_id=self.state.run_id,
            step_id=record.step_id,
            iteration=record.iteration,
            reason=reason,
        )
