"""Step and run states, and the record of one routing decision (ADR-004)."""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import Field

from plumbing.frozen import Frozen


class StepStatus(str, Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    WAITING_HUMAN = "WAITING_HUMAN"
    SUCCEEDED = "SUCCEEDED"
    SKIPPED = "SKIPPED"
    FAILED = "FAILED"
    UPSTREAM_FAILED = "UPSTREAM_FAILED"

    @property
    def settled(self) -> bool:
        return self in SETTLED


SETTLED = frozenset(
    {StepStatus.SUCCEEDED, StepStatus.SKIPPED, StepStatus.FAILED, StepStatus.UPSTREAM_FAILED}
)


class RunStatus(str, Enum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    PARTIAL = "PARTIAL"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    WAITING = "WAITING"

    @property
    def final(self) -> bool:
        return self in (
            RunStatus.COMPLETED,
            RunStatus.PARTIAL,
            RunStatus.FAILED,
            RunStatus.CANCELLED,
        )


class EvaluatedCondition(Frozen):
    expr: str
    target: str | None = None
    matched: bool
    error: str | None = None


RouteKind = Literal[
    "terminate",
    "condition",
    "next",
    "branch",
    "loop",
    "loop_exhausted",
    "detour",
    "detour_return",
    "detour_rejected",
    "tie_breaker",
    "default",
    "end",
]


class RoutingSignal(Frozen):
    """One routing decision, exactly as recorded in the run's events."""

    decision: Literal["advance", "loop", "detour", "terminate", "end"]
    next_step_id: str | None
    route: RouteKind
    reason: str
    confidence: float = 1.0
    needs_human: bool = False
    evaluated_conditions: list[EvaluatedCondition] = Field(default_factory=list)
    tie_breaker_used: bool = False
    skipped_targets: list[str] = Field(default_factory=list)
    """Targets this step could have chosen and did not: they are SKIPPED "not routed"."""
    return_to: str | None = None
    """For a detour: the step the detour returns to (ADR-004's return address)."""
    run_status: RunStatus | None = None
    """For ``decision == "terminate"``: how the run ends — COMPLETED for terminate_when or an
    output ``terminate: true``, PARTIAL for the safety bound on step executions."""
