"""Run events (DESIGN §6): one discriminated union, the only thing readers see.

The TUI, the headless printer and ``workbench runs export`` read nothing else.
Every event carries ``run_id``, a per-run ``seq`` (assigned by the store when it
is appended), ``ts`` (wall time, display only) and ``mono`` (seconds since the
run started on a monotonic clock, for durations). ``domain`` events carry a
namespaced payload that a domain package defines and validates, so the engine
never learns what research is.

Like every :class:`~engine.spec.Frozen` model, an event kind builds its validator when first
made or read; the union's adapter too, so importing this module builds nothing.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from engine.states import RoutingSignal, RunStatus
from plumbing.frozen import Frozen


class _Event(Frozen):
    run_id: str
    seq: int = 0
    ts: float = 0.0
    mono: float = 0.0


class GraphNode(Frozen):
    id: str
    uses: str
    group: str | None = None
    optional: bool = False
    has_interrupt: bool = False


class GraphEdge(Frozen):
    source: str
    target: str
    kind: Literal["depends_on", "route", "loop", "detour"] = "depends_on"


class RunStarted(_Event):
    kind: Literal["run_started"] = "run_started"
    workflow: str
    source: str
    engine: str
    engine_reason: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)
    resumed: bool = False
    forked_from: str | None = None


class StepStarted(_Event):
    kind: Literal["step_started"] = "step_started"
    step_id: str
    iteration: int = 0
    attempt: int = 1
    inputs: dict[str, Any] = Field(default_factory=dict)


class StepFinished(_Event):
    kind: Literal["step_finished"] = "step_finished"
    step_id: str
    iteration: int = 0
    outputs: dict[str, Any] = Field(default_factory=dict)
    duration_s: float = 0.0
    llm_calls: int = 0
    tokens: int = 0
    providers: list[str] = Field(default_factory=list)
    replayed_calls: int = 0
    """Journaled calls answered from the journal instead of calling out again."""
    fallback_calls: int = 0
    """Model answers the built-in fallback gave in place of a configured remote provider, or
    in place of a provider's answer that failed validation (``StepContext.count_fallback_answer``)."""


class StepSkipped(_Event):
    kind: Literal["step_skipped"] = "step_skipped"
    step_id: str
    iteration: int = 0
    reason: str


class StepFailed(_Event):
    kind: Literal["step_failed"] = "step_failed"
    step_id: str
    iteration: int = 0
    error: str
    upstream: bool = False
    """True for UPSTREAM_FAILED: the step never ran because a dependency failed."""
    optional: bool = False


class StepRetrying(_Event):
    kind: Literal["step_retrying"] = "step_retrying"
    step_id: str
    iteration: int = 0
    attempt: int
    error: str
    delay_s: float = 0.0


class RouteDecided(_Event):
    kind: Literal["route_decided"] = "route_decided"
    step_id: str
    iteration: int = 0
    signal: RoutingSignal


class InterruptRaised(_Event):
    kind: Literal["interrupt_raised"] = "interrupt_raised"
    interrupt_id: str
    step_id: str
    iteration: int = 0
    interrupt_kind: Literal["approval", "input", "tie_breaker", "delivery"]
    prompt: str
    payload: dict[str, Any] = Field(default_factory=dict)
    """What the person decides on: outputs to approve/edit, or the tie-breaker's
    valid targets, suggestion, confidence and reasoning."""
    options: list[str] = Field(default_factory=list)
    held_steps: list[str] = Field(default_factory=list)
    """Steps that cannot progress while this waits (LangGraph holds its superstep)."""


class InterruptResolved(_Event):
    kind: Literal["interrupt_resolved"] = "interrupt_resolved"
    interrupt_id: str
    step_id: str
    answer: dict[str, Any]
    automatic: bool = False


class ProviderState(_Event):
    kind: Literal["provider_state"] = "provider_state"
    provider: str
    snapshot: dict[str, Any]


class Budget(_Event):
    kind: Literal["budget"] = "budget"
    step_runs: int
    llm_calls: int
    tokens: int
    max_step_runs: int
    max_llm_calls: int
    token_budget: int
    elapsed_s: float = 0.0
    cost_usd: float = 0.0
    """What the run's model calls have cost so far (at the router's configured prices)."""
    max_cost_usd: float | None = None
    """``limits.max_cost_usd``; None when the run has no spending limit."""


class PolicyViolation(_Event):
    kind: Literal["policy_violation"] = "policy_violation"
    rule: str
    detail: str
    step_id: str | None = None


class Log(_Event):
    kind: Literal["log"] = "log"
    level: Literal["debug", "info", "warning", "error"] = "info"
    message: str
    step_id: str | None = None


class RunFinished(_Event):
    kind: Literal["run_finished"] = "run_finished"
    status: RunStatus
    reason: str = ""
    outputs: dict[str, Any] = Field(default_factory=dict)
    missing: list[str] = Field(default_factory=list)
    step_statuses: dict[str, str] = Field(default_factory=dict)


class Domain(_Event):
    kind: Literal["domain"] = "domain"
    name: str
    """Namespaced: ``research.round_scored``, ``research.stage``, ..."""
    step_id: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


RunEvent = Annotated[
    RunStarted
    | StepStarted
    | StepFinished
    | StepSkipped
    | StepFailed
    | StepRetrying
    | RouteDecided
    | InterruptRaised
    | InterruptResolved
    | ProviderState
    | Budget
    | PolicyViolation
    | Log
    | RunFinished
    | Domain,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[RunEvent] = TypeAdapter(RunEvent, config=ConfigDict(defer_build=True))


def event_from_json(data: str | bytes) -> RunEvent:
    return EVENT_ADAPTER.validate_json(data)
