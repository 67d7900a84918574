"""The mutable state of one run while an engine executes it.

Both engines keep it the same way (engine/runner.py changes it), and it is
rebuilt from the run store on resume: per step its status, iteration, latest
outputs and settled iterations; per run the counters and the active detour.

What is derived from the steps — the CEL ``steps`` map, the steps waiting for an answer — is
kept up to date one record at a time, as each record says it changed
(:meth:`StepRecord.changed`): no step's work reads every step of the workflow.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.context import RunBudget
from engine.events import Budget
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import SETTLED, StepStatus
from engine.store import OwnRow, StepIteration, StepResult

if TYPE_CHECKING:  # CEL (celpy, lark: half a second) is imported once a view is asked for
    from engine.conditions import StepsMap, StepView

Clock = Callable[[], float]
"""Monotonic seconds."""

TERMINATED_BY = "terminated by "
"""How the run's end and each step it cut off name the step that terminated the run."""

_NO_BUDGET = Budget(
    run_id="", step_runs=0, llm_calls=0, tokens=0, max_step_runs=0, max_llm_calls=0, token_budget=0
)
"""What a run without a ``budget`` event has counted (the stored engine state says more)."""


def _nothing_beyond() -> dict[str, Any]:
    return {
        "loop_counts": {},
        "returned_detours": [],
        "terminated_by": "",
        "stopped": {},
        "attempts": {},
        "active_detour": None,
    }


_NOTHING_BEYOND = _nothing_beyond()
""":meth:`RunState.beyond_counters` while no loop, detour, termination or question is under
way: one dict, compared, never stored or changed (the engine state stores a new one)."""


@dataclass(slots=True)
class StepRecord:
    spec: StepSpec
    step_id: str = field(init=False)
    """The spec's id (read a dozen times a step: a field, not a property)."""
    status: StepStatus = StepStatus.PENDING
    iteration: int = 0
    outputs: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    earlier: tuple[StepIteration, ...] = ()
    """The settled iterations before this one, oldest first (a loop or a detour's return
    brought the step back): ``steps.<id>.history`` in conditions."""
    routed_by: AbstractSet[str] = frozenset()
    """Routers that chose this step since it was last reset (a new set on each change: most
    steps have none, and share the one empty set)."""
    not_routed_by: AbstractSet[str] = frozenset()
    runs: int = 0
    attempt: int = 1
    """The attempt of the current run in progress: a step run again from its first line
    to pick up an answer resumes at it instead of repeating the attempts that failed."""
    _view: StepView | None = None
    _on_change: Callable[[StepRecord], None] | None = None
    """The run state's bookkeeping, told of every change (see :meth:`changed`)."""

    def __post_init__(self) -> None:
        self.step_id = self.spec.id

    def view(self) -> StepView:
        """``steps.<id>`` for conditions: ``history`` is the outputs of iterations before this one."""
        if self._view is None:
            from engine.conditions import StepView

            self._view = StepView(
                status=self.status.value,
                outputs=self.outputs,
                history=[h.outputs for h in self.earlier],
                iteration=self.iteration,
            )
        return self._view

    def changed(self) -> None:
        """Say that the record changed (after any change of its fields): its view is rebuilt
        when next read, and the run state updates what it keeps about it."""
        self._view = None
        if self._on_change is not None:
            self._on_change(self)

    def result(self) -> StepResult:
        return StepResult(  # validated: many paths change a record (routes, resets, forks)
            step_id=self.step_id,
            status=self.status,
            iteration=self.iteration,
            outputs=self.outputs,
            reason=self.reason,
            routed_by=sorted(self.routed_by),
            not_routed_by=sorted(self.not_routed_by),
            runs=self.runs,
            history=[],
        )

    def own_row(self) -> OwnRow:
        """:meth:`result`, not validated again and not built as a model unless a store asks
        for one, for the two moves the step runner makes on every step — RUNNING at its
        start, SUCCEEDED with its validated outputs at its end — which set only the status,
        the reason, the runs and the outputs, of their types. The other fields are set by
        paths (routes, resets, loads, forks) that store the record through the validated
        :meth:`result` as they change it."""
        status = self.status
        return OwnRow(
            {
                "step_id": self.step_id,
                "status": status._value_,
                "iteration": self.iteration,
                "outputs": self.outputs,
                "reason": self.reason,
                # most steps have no routing marks: an empty list without a call to sort
                "routed_by": sorted(self.routed_by) if self.routed_by else [],
                "not_routed_by": sorted(self.not_routed_by) if self.not_routed_by else [],
                "runs": self.runs,
                "history": [],
            },
            status,
        )

    def load(self, result: StepResult) -> None:
        """Take a stored result's status, iteration, outputs, reason and earlier iterations."""
        self.status = result.status
        self.iteration = result.iteration
        self.outputs = dict(result.outputs)
        self.reason = result.reason
        self.earlier = tuple(h for h in result.history if h.iteration < result.iteration)
        self.changed()

    def settle(
        self, status: StepStatus, outputs: dict[str, Any] | None = None, reason: str = ""
    ) -> None:
        self.status = status
        if outputs is not None:
            self.outputs = outputs
        elif status in SETTLED and status != StepStatus.SUCCEEDED:
            self.outputs = {}  # a pass that did not succeed hides what earlier passes produced
        self.reason = reason
        self.changed()

    def reset(self, routers_reset: AbstractSet[str] = frozenset()) -> None:
        """Back to PENDING for another iteration (a loop or a detour's return).

        Routing marks from ``routers_reset`` — routers that go back to PENDING
        with this step and will decide again — are dropped; marks from routers
        that stay settled still hold. A settled pass joins the earlier iterations.
        """
        if self.status.settled:
            self.earlier = (
                *self.earlier,
                StepIteration(
                    iteration=self.iteration,
                    status=self.status,
                    outputs=self.outputs,
                    reason=self.reason,
                ),
            )
        self.status = StepStatus.PENDING
        self.iteration += 1
        self.reason = ""
        self.routed_by -= routers_reset
        self.not_routed_by -= routers_reset
        self.changed()


@dataclass
class ActiveDetour:
    declared_by: str
    target: str


@dataclass
class RunState:
    run_id: str
    wf: WorkflowDefinition
    inputs: dict[str, Any]
    budget: RunBudget
    steps: dict[str, StepRecord]
    step_runs: int = 0
    active_detour: ActiveDetour | None = None
    clock: Clock = time.monotonic
    """Monotonic seconds: what times the run (elapsed, ``timeout_s``); the engine's injected
    clock once a runner drives the run (:meth:`start_clock`)."""
    started_mono: float = field(default_factory=time.monotonic)
    elapsed_before: float = 0.0
    """Seconds this run spent in earlier sessions (before a resume)."""
    loop_counts: dict[str, int] = field(default_factory=dict)
    """Per routing step, how many times its own loop has gone back."""
    returned_detours: set[str] = field(default_factory=set)
    """Steps running again because their detour returned (the detour is not taken again on that pass)."""
    limit_reason: str = ""
    """Set when a limit stopped the run: it ends PARTIAL with this reason."""
    terminated_by: str = ""
    """The first step that ended the run by ``terminate_when`` or ``terminate: true``."""
    stopped: dict[str, str] = field(default_factory=dict)
    """Steps a termination cut off (what the terminating step leads to) -> why; each is
    SKIPPED when its dependencies have settled. Steps it does not lead to run on."""
    answering: set[str] = field(default_factory=set)
    """Steps restored while waiting for an answer: their next run continues the start
    already counted (max_step_runs counts it once)."""
    _steps_map: StepsMap | None = field(default=None, init=False, repr=False)
    """The CEL ``steps`` of every activation, built at the first one and kept current."""
    _stale: set[str] = field(default_factory=set, init=False, repr=False)
    """Steps whose record changed since ``_steps_map`` was brought up to date."""
    _waiting: set[str] = field(default_factory=set, init=False, repr=False)
    """Steps WAITING_HUMAN (their attempts are part of the engine state)."""
    _inputs_cel: tuple[dict[str, Any], Any] | None = field(default=None, init=False, repr=False)
    """The inputs and their CEL value, converted once."""

    _order: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    """Each step's place in the definition."""

    def __post_init__(self) -> None:
        self._order = {step_id: index for index, step_id in enumerate(self.steps)}
        on_change = self._record_changed  # one bound method for every record
        for record in self.steps.values():
            record._on_change = on_change
            on_change(record)

    def _record_changed(self, record: StepRecord) -> None:
        """Keep what the run state derives from its records current, one record at a time:
        the work per change does not grow with the workflow."""
        step_id = record.step_id
        if self._steps_map is not None:
            self._stale.add(step_id)
        if record.status == StepStatus.WAITING_HUMAN:
            self._waiting.add(step_id)
        else:
            self._waiting.discard(step_id)

    def start_clock(self, clock: Clock) -> None:
        """Time this session of the run by ``clock``, from now."""
        self.clock = clock
        self.started_mono = clock()

    def record_termination(
        self, step_id: str, cut_off: Iterable[str], first: Callable[[str, str], str]
    ) -> None:
        """``step_id`` ended the run, cutting ``cut_off`` off. Several steps may terminate
        while their branches run side by side: which finished first is timing, so the one
        named (for the run and for each step cut off) is ``first`` in the definition."""
        if not self.terminated_by or first(step_id, self.terminated_by) == step_id:
            self.terminated_by = step_id
        for cut in cut_off:
            earlier = self.stopped.get(cut, "").removeprefix(TERMINATED_BY)
            if not earlier or first(step_id, earlier) == step_id:
                self.stopped[cut] = f"{TERMINATED_BY}{step_id}"

    @classmethod
    def fresh(cls, run_id: str, wf: WorkflowDefinition, inputs: dict[str, Any]) -> RunState:
        return cls(
            run_id=run_id,
            wf=wf,
            inputs=inputs,
            budget=RunBudget(
                max_llm_calls=wf.limits.max_llm_calls,
                token_budget=wf.limits.token_budget,
                max_cost_usd=wf.limits.max_cost_usd,
            ),
            steps={spec.id: StepRecord(spec=spec) for spec in wf.steps},
        )

    @classmethod
    def restore(
        cls,
        run_id: str,
        wf: WorkflowDefinition,
        inputs: dict[str, Any],
        results: dict[str, StepResult],
        engine_state: dict[str, Any],
        last_budget: Budget | None = None,
    ) -> RunState:
        """Rebuild from the store; a step that was running or waiting goes back to PENDING.

        The counters are the latest of the stored engine state's and the run's last
        ``budget`` event's: a settled step stores its counters in its ``budget`` event and
        the engine state only when :meth:`beyond_counters` changed, so either may be the
        later. Every counter only grows within a run, so the larger is the later."""
        state = cls.fresh(run_id, wf, inputs)
        for step_id, result in results.items():
            record = state.steps.get(step_id)
            if record is None:
                continue
            record.load(result)
            if result.status in (StepStatus.RUNNING, StepStatus.WAITING_HUMAN):
                record.status = StepStatus.PENDING
            if result.status == StepStatus.WAITING_HUMAN:
                state.answering.add(step_id)
                record.attempt = int(engine_state.get("attempts", {}).get(step_id, 1))
            record.routed_by = set(result.routed_by)
            record.not_routed_by = set(result.not_routed_by)
            record.runs = result.runs
            record.changed()
        counted = last_budget or _NO_BUDGET
        state.step_runs = max(int(engine_state.get("step_runs", 0)), counted.step_runs)
        state.budget.llm_calls = max(int(engine_state.get("llm_calls", 0)), counted.llm_calls)
        state.budget.tokens = max(int(engine_state.get("tokens", 0)), counted.tokens)
        state.budget.cost_usd = max(float(engine_state.get("cost_usd", 0.0)), counted.cost_usd)
        state.elapsed_before = max(float(engine_state.get("elapsed_s", 0.0)), counted.elapsed_s)
        state.loop_counts = {k: int(v) for k, v in engine_state.get("loop_counts", {}).items()}
        state.returned_detours = set(engine_state.get("returned_detours", []))
        state.terminated_by = str(engine_state.get("terminated_by", ""))
        state.stopped = {str(k): str(v) for k, v in engine_state.get("stopped", {}).items()}
        detour = engine_state.get("active_detour")
        if detour:
            state.active_detour = ActiveDetour(
                declared_by=detour["declared_by"], target=detour["target"]
            )
        return state

    def engine_state(self) -> dict[str, Any]:
        """What resume needs besides the step results: the counters (also in every ``budget``
        event) and :meth:`beyond_counters`."""
        return {
            "step_runs": self.step_runs,
            "llm_calls": self.budget.llm_calls,
            "tokens": self.budget.tokens,
            "cost_usd": self.budget.cost_usd,
            "elapsed_s": round(self.elapsed_s, 6),
            **(
                beyond
                if (beyond := self.beyond_counters()) is not _NOTHING_BEYOND
                else _nothing_beyond()
            ),
        }

    def beyond_counters(self) -> dict[str, Any]:
        """The part of :meth:`engine_state` no ``budget`` event carries: loops, detours,
        terminations, the attempts of waiting steps. The same (unchanged) dict while none of
        them is under way, most of a run: a settled step whose ``budget`` event carries the
        counters stores the engine state only when this part changed (engine/recorder.py)."""
        detour = self.active_detour
        if not (
            self.loop_counts
            or self.returned_detours
            or self.terminated_by
            or self.stopped
            or self._waiting
            or detour
        ):
            return _NOTHING_BEYOND
        return {
            "loop_counts": dict(self.loop_counts),
            "returned_detours": sorted(self.returned_detours),
            "terminated_by": self.terminated_by,
            "stopped": dict(self.stopped),
            # the attempt a waiting step asked in: resume continues it instead of repeating
            # the attempts that failed before the question
            "attempts": {
                step_id: self.steps[step_id].attempt
                for step_id in sorted(self._waiting, key=self._order.__getitem__)
                if self.steps[step_id].attempt > 1
            },
            "active_detour": {"declared_by": detour.declared_by, "target": detour.target}
            if detour
            else None,
        }

    @property
    def elapsed_s(self) -> float:
        return self.elapsed_before + (self.clock() - self.started_mono)

    @property
    def remaining_s(self) -> float:
        """Wall time left under ``limits.timeout_s``, earlier sessions included."""
        return self.wf.limits.timeout_s - self.elapsed_s

    def time_out(self) -> None:
        """The run's wall-time limit is reached: it ends PARTIAL."""
        self.limit_reason = f"timeout_s {self.wf.limits.timeout_s:g} reached"

    @property
    def stop_reason(self) -> str:
        """Why the run stops before every step has settled: a limit ("" if none). A
        termination is no stop of the whole run: it cuts off what the terminating step
        leads to (``stopped``), and steps it does not lead to run on."""
        return self.limit_reason

    def activation(
        self, outputs: dict[str, Any] | None = None, iteration: int = 0
    ) -> dict[str, Any]:
        """The CEL activation of the run as it stands (``outputs``, ``iteration``: the
        deciding step's). Its ``steps`` is the run's own map, kept current: evaluate against
        it before the run changes again (evaluation is synchronous, so any caller does)."""
        from engine.conditions import StepsMap, build_activation, to_cel

        if self._steps_map is None:
            self._steps_map = StepsMap({s: record.view() for s, record in self.steps.items()})
            self._stale.clear()
        for step_id in self._stale:
            self._steps_map.put(step_id, self.steps[step_id].view())
        self._stale.clear()
        if self._inputs_cel is None or self._inputs_cel[0] is not self.inputs:
            self._inputs_cel = (self.inputs, to_cel(self.inputs))
        return build_activation(
            inputs=self._inputs_cel[1],
            steps=self._steps_map,
            outputs=outputs,
            iteration=iteration,
            run=self.counters(),
        )

    def counters(self) -> dict[str, Any]:
        return {
            "step_runs": self.step_runs,
            "llm_calls": self.budget.llm_calls,
            "tokens": self.budget.tokens,
            "elapsed_s": self.elapsed_s,
            "max_step_runs": self.wf.limits.step_run_bound(len(self.wf.steps)),
        }

    def statuses(self) -> dict[str, StepStatus]:
        return {step_id: record.status for step_id, record in self.steps.items()}
