"""What the run store holds: runs, step results with their iterations, interrupts."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_core import to_json

from engine.context import InterruptAnswer, InterruptRequest
from engine.spec import WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.store.ownership import OwnerStatus, RunOwner
from engine.trusted import trusted_whole
from plumbing.frozen import Frozen


class UnknownRun(LookupError):
    """No run with this id is stored."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"no run {run_id!r} in the run store")
        self.run_id = run_id


class UnreadableRun(ValueError):
    """A stored run this version cannot read back: its workflow definition no longer validates
    (a version that let it be stored, or an edited file). ``str()`` is one line; the other runs
    are unaffected."""

    def __init__(self, run_id: str, problem: str) -> None:
        super().__init__(
            f"run {run_id!r}: its stored workflow definition cannot be read ({problem}) — the "
            "other runs are unaffected; leave this one out (workbench runs copy takes the run "
            "ids to copy)"
        )
        self.run_id = run_id


def stored_definition(run_id: str, text: str | bytes) -> WorkflowDefinition:
    """The workflow definition stored with run ``run_id``; :class:`UnreadableRun` when it does
    not validate."""
    try:
        return WorkflowDefinition.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UnreadableRun(run_id, f"{where}: {first['msg']}" if where else first["msg"]) from None


class InterruptClosed(RuntimeError):
    """An answer to an interrupt that is not pending: someone answered it first (each prompt
    takes one answer). ``str()`` is one line."""

    def __init__(self, record: InterruptRecord) -> None:
        super().__init__(
            f"interrupt {record.interrupt_id} of run {record.run_id} is {record.status} already;"
            " each prompt takes one answer"
        )
        self.record = record


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


class RunInputs(RunSummary):
    """A run as lists show it: its summary and what it was given, without its definition."""

    inputs: dict[str, Any] = Field(default_factory=dict)
    declared_inputs: list[str] = Field(default_factory=list)
    """The inputs its workflow declares, in the workflow's order."""


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


class OwnRow:
    """A step's result row of the values the step runner set itself (``StepRecord.own_row``:
    RUNNING at the step's start, SUCCEEDED at its end, twice a step): every field of
    :class:`StepResult` in declaration order, of its type, but the status as its text — what
    the row's JSON holds. The in-memory store writes that JSON from the fields
    (:meth:`json`), which costs half of building the model and encoding it (pydantic-core's
    inference on the ``StepStatus`` enum is slow; on its text it is not); a store that writes
    models builds it (:meth:`model`)."""

    __slots__ = ("fields", "status")

    def __init__(self, fields: dict[str, Any], status: StepStatus) -> None:
        self.fields = fields
        """The row's fields, ``status`` as ``status.value``."""
        self.status = status

    def model(self) -> StepResult:
        """The row's :class:`StepResult` (``trusted_whole``: not validated again)."""
        return trusted_whole(StepResult, {**self.fields, "status": self.status})

    def json(self) -> bytes:
        """``json_bytes(self.model())`` from the fields (infinities and NaN as ``null``, as
        the model writes them)."""
        return to_json(self.fields, inf_nan_mode="null")


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


INTERRUPT_COLUMNS = (
    "interrupt_id, run_id, step_id, iteration, request, status, answer, created_ts, resolved_ts"
)
"""The ``interrupts`` table's columns, in the order :func:`interrupt_from_row` reads them."""
STEP_HISTORY_SELECT = "SELECT step_id, iteration, status, outputs, reason FROM step_history"
STEP_RESULTS_SELECT = (
    "SELECT step_id, status, iteration, outputs, reason, routed_by, not_routed_by, runs"
    " FROM step_results"
)


def interrupt_from_row(row: tuple[Any, ...]) -> InterruptRecord:
    """An interrupt read from an SQL store (:data:`INTERRUPT_COLUMNS`; request and answer as
    JSON text)."""
    interrupt_id, run_id, step_id, iteration, request, status, answer, created, resolved = row
    return InterruptRecord(
        interrupt_id=interrupt_id,
        run_id=run_id,
        step_id=step_id,
        iteration=iteration,
        request=InterruptRequest.model_validate_json(request),
        status=status,
        answer=InterruptAnswer.model_validate_json(answer) if answer else None,
        created_ts=created,
        resolved_ts=resolved,
    )


def step_results_from_rows(
    history_rows: Iterable[tuple[Any, ...]],
    result_rows: Iterable[tuple[Any, ...]],
    loads: Callable[[Any], Any],
) -> dict[str, StepResult]:
    """A run's step results read from an SQL store (:data:`STEP_HISTORY_SELECT` rows ordered by
    step and iteration, :data:`STEP_RESULTS_SELECT` rows); ``loads`` reads a JSON column."""
    history: dict[str, list[StepIteration]] = {}
    for step_id, iteration, status, outputs, reason in history_rows:
        history.setdefault(step_id, []).append(
            StepIteration(
                iteration=iteration,
                status=StepStatus(status),
                outputs=loads(outputs),
                reason=reason,
            )
        )
    return {
        step_id: StepResult(
            step_id=step_id,
            status=StepStatus(status),
            iteration=iteration,
            outputs=loads(outputs),
            reason=reason,
            routed_by=loads(routed_by),
            not_routed_by=loads(not_routed_by),
            runs=runs,
            history=history.get(step_id, []),
        )
        for step_id, status, iteration, outputs, reason, routed_by, not_routed_by, runs in result_rows
    }


def new_run_id() -> str:
    """Sortable by creation time, unique without coordination: six random hex digits (read
    from the OS directly: a ``uuid4`` object per run cost more than the rest of the id). The
    local time through ``time`` rather than a ``datetime``: the same text, a third of the cost
    in a run's cold start."""
    return f"{time.strftime('%Y%m%d-%H%M%S', time.localtime())}-{os.urandom(3).hex()}"
