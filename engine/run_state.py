"""The mutable state of one run while an engine executes it.

Both engines keep it the same way (engine/runner.py changes it), and it is
rebuilt from the run store on resume: per step its status, iteration, latest
outputs and settled iterations; per run the counters and the active detour.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.context import RunBudget
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import StepStatus
from engine.store import StepIteration, StepResult

if TYPE_CHECKING:  # CEL (celpy, lark: half a second) is imported once a view is asked for
    from engine.conditions import StepView

TERMINATED_BY = "terminated by "
"""How the run's end and each step it cut off name the step that terminated the run."""


@dataclass
class StepRecord:
    spec: StepSpec
    status: StepStatus = StepStatus.PENDING
    iteration: int = 0
    outputs: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    history: list[StepIteration] = field(default_factory=list)
    """Every settled iteration, oldest first (the latest one included)."""
    routed_by: set[str] = field(default_factory=set)
    """Routers that chose this step since it was last reset."""
    not_routed_by: set[str] = field(default_factory=set)
    runs: int = 0
    attempt: int = 1
    """The attempt of the current run in progress: a step run again from its first line
    to pick up an answer resumes at it instead of repeating the attempts that failed."""
    _view: StepView | None = None

    @property
    def step_id(self) -> str:
        return self.spec.id

    def view(self) -> StepView:
        """``steps.<id>`` for conditions: ``history`` is the outputs of iterations before this one."""
        if self._view is None:
            from engine.conditions import StepView

            self._view = StepView(
                status=self.status.value,
                outputs=self.outputs,
                history=[h.outputs for h in self.history if h.iteration < self.iteration],
                iteration=self.iteration,
            )
        return self._view

    def changed(self) -> None:
        self._view = None

    def result(self) -> StepResult:
        return StepResult(  # validating these few plain fields is cheaper than model_construct
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

    def load(self, result: StepResult) -> None:
        """Take a stored result's status, iteration, outputs, reason and settled iterations."""
        self.status = result.status
        self.iteration = result.iteration
        self.outputs = dict(result.outputs)
        self.reason = result.reason
        self.history = list(result.history)
        self.changed()

    def settle(
        self, status: StepStatus, outputs: dict[str, Any] | None = None, reason: str = ""
    ) -> None:
        self.status = status
        if outputs is not None:
            self.outputs = outputs
        elif status.settled and status != StepStatus.SUCCEEDED:
            self.outputs = {}  # a pass that did not succeed hides what earlier passes produced
        self.reason = reason
        if status.settled:
            self.history = [h for h in self.history if h.iteration != self.iteration]
            self.history.append(
                StepIteration(
                    iteration=self.iteration, status=status, outputs=self.outputs, reason=reason
                )
            )
        self.changed()

    def reset(self, routers_reset: set[str] | frozenset[str] = frozenset()) -> None:
        """Back to PENDING for another iteration (a loop or a detour's return).

        Routing marks from ``routers_reset`` — routers that go back to PENDING
        with this step and will decide again — are dropped; marks from routers
        that stay settled still hold.
        """
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
    ) -> RunState:
        """Rebuild from the store; a step that was running or waiting goes back to PENDING."""
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
        state.step_runs = int(engine_state.get("step_runs", 0))
        state.budget.llm_calls = int(engine_state.get("llm_calls", 0))
        state.budget.tokens = int(engine_state.get("tokens", 0))
        state.budget.cost_usd = float(engine_state.get("cost_usd", 0.0))
        state.elapsed_before = float(engine_state.get("elapsed_s", 0.0))
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
        """What resume needs besides the step results."""
        detour = self.active_detour
        return {
            "step_runs": self.step_runs,
            "llm_calls": self.budget.llm_calls,
            "tokens": self.budget.tokens,
            "cost_usd": self.budget.cost_usd,
            "elapsed_s": round(self.elapsed_s, 6),
            "loop_counts": dict(self.loop_counts),
            "returned_detours": sorted(self.returned_detours),
            "terminated_by": self.terminated_by,
            "stopped": dict(self.stopped),
            # the attempt a waiting step asked in: resume continues it instead of repeating
            # the attempts that failed before the question
            "attempts": {
                step_id: record.attempt
                for step_id, record in self.steps.items()
                if record.status == StepStatus.WAITING_HUMAN and record.attempt > 1
            },
            "active_detour": {"declared_by": detour.declared_by, "target": detour.target}
            if detour
            else None,
        }

    @property
    def elapsed_s(self) -> float:
        return self.elapsed_before + (time.monotonic() - self.started_mono)

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

    def views(self) -> dict[str, StepView]:
        return {step_id: record.view() for step_id, record in self.steps.items()}

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
