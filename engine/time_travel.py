"""Time travel (DESIGN §5, README "History and fork"): the state a run was in just before
one pass of one step began, rebuilt from the run's own events.

What a fork at ``STEP@N`` restores:

* the *rerun set* — STEP, everything it leads to (forward edges, a loop's way
  back into its body, a detour's return), which is everything STEP's pass can
  influence — as it was just before STEP's pass N began: statuses, iterations,
  outputs and their history, run counts, loop counts, the active detour. A step
  of the set that was running at that moment goes back to PENDING and runs again;
* every other step as the run finally left it — nothing STEP does can reach it,
  so any of its results goes with any state of the rerun set;
* the run's counters (step runs, model calls, tokens) as they were at that
  moment: the fork's budget is what the run had spent when the pass began.

Rebuilding replays the parent's events through the same route application the
engines use (:class:`~engine.route_application.RouteApplication`) on a scratch
store, so a loop's reset and a detour's return are applied exactly as they were.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from engine.events import (
    Budget,
    RouteDecided,
    RunEvent,
    StepFailed,
    StepFinished,
    StepSkipped,
    StepStarted,
)
from engine.graph import WorkflowGraph
from engine.protocol import ForkEdits, RunContext
from engine.recorder import RunRecorder
from engine.route_application import RouteApplication, RouteEffects
from engine.run_inputs import resolve_inputs
from engine.run_state import TERMINATED_BY, RunState
from engine.spec import WorkflowDefinition
from engine.states import StepStatus
from engine.steps import StepRegistry
from engine.store import BaseRunStore, InMemoryRunStore, StepResult

_POINT = re.compile(r"^(?P<step>[a-z][a-z0-9_]*)(?:@(?P<iteration>\d+))?$")


class ForkError(ValueError):
    """A fork that cannot be made as asked; the message says what to do instead."""


@dataclass(frozen=True)
class ForkPoint:
    """``STEP`` or ``STEP@ITERATION``: just before that pass of that step began."""

    step_id: str
    iteration: int = 0

    @classmethod
    def parse(cls, text: str) -> ForkPoint:
        match = _POINT.match(text.strip())
        if match is None:
            raise ForkError(
                f"--at {text!r} is not STEP or STEP@ITERATION (e.g. critic or critic@2)"
            )
        return cls(match["step"], int(match["iteration"] or 0))

    def __str__(self) -> str:
        return f"{self.step_id}@{self.iteration}" if self.iteration else self.step_id


def rerun_set(graph: WorkflowGraph, step_id: str) -> frozenset[str]:
    """Every step a pass of ``step_id`` can influence: it, what it leads to on forward
    edges, a loop's whole body when its router is reached, a detour's declaring step
    when its target is reached — and so on until nothing new is reached."""
    bodies = {edge.source: graph.between(edge.target, edge.source) for edge in graph.loop_edges}
    returns = {edge.source: edge.target for edge in graph.detour_edges}
    reached = {step_id}
    todo = [step_id]
    while todo:
        current = todo.pop()
        following = [*graph.descendants(current), *bodies.get(current, ())]
        if current in returns:
            following.append(returns[current])
        for step in following:
            if step not in reached:
                reached.add(step)
                todo.append(step)
    return frozenset(reached)


def _starts_pass(event: RunEvent, point: ForkPoint) -> bool:
    """The first event of ``point``'s pass: it started, or settled without starting."""
    if getattr(event, "step_id", None) != point.step_id:
        return False
    if isinstance(event, StepStarted):
        return event.attempt == 1 and event.iteration == point.iteration
    if isinstance(event, (StepFinished, StepSkipped, StepFailed)):
        return event.iteration == point.iteration
    return False


def state_before(
    wf: WorkflowDefinition,
    inputs: dict[str, Any],
    events: Sequence[RunEvent],
    point: ForkPoint,
    run_id: str,
) -> RunState:
    """The run's state just before ``point``'s pass began, replayed from ``events``."""
    scratch = InMemoryRunStore()
    scratch.create_run(wf, inputs, "replay", "time travel", run_id=run_id)
    state = RunState.fresh(run_id, wf, inputs)
    graph = WorkflowGraph.of(wf)
    routes = RouteApplication(RunRecorder(state, scratch), graph, RunContext(store=scratch))
    passes: set[int] = set()
    found = False
    for index, event in enumerate(events):
        if _starts_pass(event, point):
            found = True
            break
        step_id = getattr(event, "step_id", None)
        if step_id == point.step_id and isinstance(event, StepStarted):
            passes.add(event.iteration)
        if isinstance(event, Budget):
            state.budget.llm_calls, state.budget.tokens = event.llm_calls, event.tokens
        if step_id is None or step_id not in state.steps:
            continue
        record = state.steps[step_id]
        if isinstance(event, StepStarted) and event.attempt == 1:
            record.iteration = event.iteration
            record.status = StepStatus.RUNNING
            record.runs += 1
            state.step_runs += 1
        elif isinstance(event, (StepFinished, StepSkipped, StepFailed)):
            record.iteration = event.iteration
            if isinstance(event, StepFinished):
                record.settle(StepStatus.SUCCEEDED, outputs=dict(event.outputs))
            elif isinstance(event, StepSkipped):
                record.settle(StepStatus.SKIPPED, reason=event.reason)
            else:
                failed = StepStatus.UPSTREAM_FAILED if event.upstream else StepStatus.FAILED
                record.settle(failed, reason=event.error)
            effects = RouteEffects()
            following = events[index + 1] if index + 1 < len(events) else None
            if isinstance(following, RouteDecided) and following.step_id == step_id:
                routes.apply(record, following.signal, effects)
            routes.after_settle(record, effects)
    if not found:
        known = ", ".join(str(n) for n in sorted(passes)) or "none"
        raise ForkError(
            f"step {point.step_id!r} has no pass {point.iteration} in this run "
            f"(passes that started: {known}); fork at one of those"
        )
    for record in state.steps.values():
        if record.status in (StepStatus.RUNNING, StepStatus.WAITING_HUMAN):
            record.status = StepStatus.PENDING  # it runs again in the fork
            record.runs -= 1
            state.step_runs -= 1
            record.changed()
    return state


def restore(
    wf: WorkflowDefinition,
    inputs: dict[str, Any],
    events: Sequence[RunEvent],
    final: Mapping[str, StepResult],
    final_engine_state: Mapping[str, Any],
    point: ForkPoint,
    run_id: str,
) -> RunState:
    """The fork's starting state (see the module docstring)."""
    if point.step_id not in wf.step_ids:
        raise ForkError(
            f"workflow {wf.name} has no step {point.step_id!r}; steps: {', '.join(wf.step_ids)}"
        )
    state = state_before(wf, inputs, events, point, run_id)
    graph = WorkflowGraph.of(wf)
    rerun = rerun_set(graph, point.step_id)
    final_counts = final_engine_state.get("loop_counts", {})
    for step_id, record in state.steps.items():
        result = final.get(step_id)
        if step_id in rerun and result is not None:
            # routers outside the rerun set decided for good: their marks stand
            record.routed_by |= {r for r in result.routed_by if r not in rerun}
            record.not_routed_by |= {r for r in result.not_routed_by if r not in rerun}
            record.changed()
        if step_id in rerun or result is None or not result.status.settled:
            continue
        record.load(result)
        record.routed_by = set(result.routed_by)
        record.not_routed_by = set(result.not_routed_by)
        record.runs = result.runs
        if step_id in final_counts:
            state.loop_counts[step_id] = int(final_counts[step_id])
    _keep_detours(state, rerun)
    _keep_terminations(state, final_engine_state, rerun, graph)
    return state


def _keep_detours(state: RunState, rerun: frozenset[str]) -> None:
    """A detour under way at the fork point whose steps are kept (its target, and so its
    declarer, outside the rerun set) has ended as the kept results say: it is no longer
    active, and its declarer's dependents do not wait for a return that never comes."""
    detour = state.active_detour
    if detour is not None and detour.target not in rerun:
        state.active_detour = None
    state.returned_detours &= rerun


def _keep_terminations(
    state: RunState,
    final_engine_state: Mapping[str, Any],
    rerun: frozenset[str],
    graph: WorkflowGraph,
) -> None:
    """A kept step that ended the run (perhaps after the fork point) still ends it: what
    it cut off stays cut off — steps of the rerun set included — and it is named."""
    kept = set(state.steps) - rerun
    cut_by: dict[str, list[str]] = {}
    for cut, reason in final_engine_state.get("stopped", {}).items():
        cut_by.setdefault(str(reason).removeprefix(TERMINATED_BY), []).append(str(cut))
    terminator = str(final_engine_state.get("terminated_by", ""))
    for step_id in sorted(kept & ({terminator} | set(cut_by))):
        state.record_termination(step_id, cut_by.get(step_id, ()), graph.first_in_definition)


def apply_edits(state: RunState, edits: ForkEdits, registry: StepRegistry) -> None:
    """Set edited outputs on restored steps (validated by each step's output model)."""
    for step_id, changes in edits.outputs.items():
        record = state.steps.get(step_id)
        if record is None:
            raise ForkError(f"--set names no step {step_id!r}; steps: {', '.join(state.steps)}")
        if record.status != StepStatus.SUCCEEDED:
            raise ForkError(
                f"--set {step_id}: the step is {record.status.value} at the fork point; only "
                "outputs of a step that succeeded before it can be set (fork later, or at it)"
            )
        outputs = {**record.outputs, **changes}
        model = registry.get(record.spec.uses).output_model
        try:
            outputs = model.model_validate(outputs).model_dump(mode="json")
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "(outputs)"
            raise ForkError(
                f"--set {step_id}: {where}: {first.get('msg', 'invalid')}; give a value "
                f"{record.spec.uses} accepts"
            ) from None
        record.outputs = outputs
        record.changed()


def fork_state(
    store: BaseRunStore,
    run_id: str,
    point: ForkPoint,
    edits: ForkEdits,
    registry: StepRegistry,
    new_run_id: str,
) -> RunState:
    """The starting state of a fork of ``run_id`` at ``point`` with ``edits`` (raises
    ForkError saying what to do when it cannot be made; call it to check a fork first)."""
    parent = store.get_run(run_id)
    wf = parent.definition
    try:
        inputs = resolve_inputs(wf, {**parent.inputs, **edits.inputs})
    except ValueError as error:
        raise ForkError(f"--input: {error}") from None
    state = restore(
        wf,
        inputs,
        store.events(run_id),
        store.step_results(run_id),
        parent.engine_state,
        point,
        new_run_id,
    )
    apply_edits(state, edits, registry)
    return state
