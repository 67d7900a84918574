"""The canonical form of a run, and the difference between two (DESIGN §5, shadow mode).

Two engines agree when, for every step, the step's *own* events and results are
the same, the route decisions are the same, and each respected the dependency
order. The interleaving of unrelated steps is deliberately not part of the
canonical form: a wavefront scheduler (Kahn) and a superstep scheduler
(LangGraph) are free to vary it.

What is dropped from each event, because it differs between two correct runs:
``run_id``, ``seq``, wall and monotonic times, durations, how many calls were
answered from the journal (the second engine of a shadow run replays them all),
an interrupt's ``held_steps`` (LangGraph holds a superstep, Kahn holds nothing)
and the run id inside interrupt ids. Everything else is compared as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field

from engine.events import (
    InterruptRaised,
    InterruptResolved,
    RouteDecided,
    RunEvent,
    RunFinished,
    StepFailed,
    StepFinished,
    StepRetrying,
    StepSkipped,
    StepStarted,
)
from engine.rebase import rebase
from plumbing.frozen import Frozen

_PER_STEP = (
    StepStarted,
    StepFinished,
    StepSkipped,
    StepFailed,
    StepRetrying,
    RouteDecided,
    InterruptRaised,
    InterruptResolved,
)
_INTERRUPTS = (InterruptRaised, InterruptResolved)
_SETTLING = (StepFinished, StepSkipped, StepFailed)
_DROPPED_FIELDS = frozenset(
    {"run_id", "seq", "ts", "mono", "duration_s", "replayed_calls", "held_steps"}
)


class CanonicalRun(Frozen):
    """One run reduced to what two conforming engines must agree on."""

    status: str
    outputs: dict[str, Any] = Field(default_factory=dict)
    step_statuses: dict[str, str] = Field(default_factory=dict)
    steps: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """Per step, its own events in its own order, normalised."""
    routes: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """Per routing step, its decisions in order."""
    order_violations: list[str] = Field(default_factory=list)
    """Steps that started before a dependency had settled (should always be empty)."""


class Difference(Frozen):
    where: str
    """``status``, ``outputs``, ``step_statuses.<id>``, ``steps.<id>``, ``routes.<id>``, ``order``."""
    left: Any = None
    right: Any = None


class DifferenceReport(Frozen):
    left_engine: str
    right_engine: str
    left_run: str
    right_run: str
    differences: list[Difference] = Field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences

    def render(self) -> str:
        head = f"shadow: {self.left_engine} run {self.left_run} vs {self.right_engine} run {self.right_run}"
        if self.identical:
            return f"{head}: identical"
        lines = [f"{head}: {len(self.differences)} difference(s)"]
        for diff in self.differences:
            lines.append(f"  {diff.where}:")
            lines.append(f"    {self.left_engine}: {diff.left!r}")
            lines.append(f"    {self.right_engine}: {diff.right!r}")
        return "\n".join(lines)


def _scrub(value: Any, run_id: str) -> Any:
    """Replace the run id wherever it appears inside strings (interrupt ids, errors)."""
    return rebase(value, run_id, "<run>")


def _normalise(event: RunEvent) -> dict[str, Any]:
    data = event.model_dump(
        mode="json", exclude=set(_DROPPED_FIELDS) & set(type(event).model_fields)
    )
    scrubbed: dict[str, Any] = _scrub(data, event.run_id)
    return scrubbed


def order_violations(
    events: Sequence[RunEvent], dependencies: Mapping[str, Iterable[str]]
) -> list[str]:
    """Every start of a step that came before one of its dependencies had settled.

    ``dependencies`` are the forward edges (depends_on and route edges; a loop's
    back edge orders nothing). A dependency has settled when it has a finished,
    skipped or failed event earlier in the log.
    """
    settled: set[str] = set()
    violations: list[str] = []
    for event in events:
        if isinstance(event, _SETTLING):
            settled.add(event.step_id)
        elif isinstance(event, StepStarted):
            missing = sorted(set(dependencies.get(event.step_id, ())) - settled)
            if missing:
                violations.append(
                    f"{event.step_id} (iteration {event.iteration}) started before {', '.join(missing)} settled"
                )
    return violations


def canonical_run(
    events: Sequence[RunEvent],
    dependencies: Mapping[str, Iterable[str]] | None = None,
    *,
    interrupts: bool = True,
) -> CanonicalRun:
    """Reduce a run's event log to its canonical form.

    ``interrupts=False`` leaves interrupt events out: a run answered from another
    run's journal (shadow mode) is never asked, so it raises none.
    """
    steps: dict[str, list[dict[str, Any]]] = {}
    routes: dict[str, list[dict[str, Any]]] = {}
    finished: RunFinished | None = None
    for event in events:
        if isinstance(event, RunFinished):
            finished = event
        elif isinstance(event, _PER_STEP):
            if not interrupts and isinstance(event, _INTERRUPTS):
                continue
            record = _normalise(event)
            steps.setdefault(event.step_id, []).append(record)
            if isinstance(event, RouteDecided):
                routes.setdefault(event.step_id, []).append(record["signal"])
    run_id = finished.run_id if finished else ""
    return CanonicalRun(
        status=finished.status.value if finished else "UNFINISHED",
        outputs=_scrub(finished.outputs, run_id) if finished else {},
        step_statuses=dict(finished.step_statuses) if finished else {},
        steps=steps,
        routes=routes,
        order_violations=order_violations(events, dependencies or {}),
    )


def compare(left: CanonicalRun, right: CanonicalRun) -> list[Difference]:
    """Every place two canonical runs differ; empty when they conform."""
    diffs: list[Difference] = []
    if left.status != right.status:
        diffs.append(Difference(where="status", left=left.status, right=right.status))
    if left.outputs != right.outputs:
        diffs.append(Difference(where="outputs", left=left.outputs, right=right.outputs))
    for step_id in sorted(set(left.step_statuses) | set(right.step_statuses)):
        a, b = left.step_statuses.get(step_id), right.step_statuses.get(step_id)
        if a != b:
            diffs.append(Difference(where=f"step_statuses.{step_id}", left=a, right=b))
    for step_id in sorted(set(left.routes) | set(right.routes)):
        a_routes, b_routes = left.routes.get(step_id, []), right.routes.get(step_id, [])
        if a_routes != b_routes:
            diffs.append(Difference(where=f"routes.{step_id}", left=a_routes, right=b_routes))
    for step_id in sorted(set(left.steps) | set(right.steps)):
        a_events, b_events = left.steps.get(step_id, []), right.steps.get(step_id, [])
        if a_events != b_events:
            diffs.append(Difference(where=f"steps.{step_id}", left=a_events, right=b_events))
    if left.order_violations or right.order_violations:
        diffs.append(
            Difference(where="order", left=left.order_violations, right=right.order_violations)
        )
    return diffs
