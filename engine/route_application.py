"""A settled step's route: deciding it (ADR-004, engine/routing.py) and applying it to
the run — loops reset, detours start and return, termination.

Targets not chosen need nothing here: the step runner's readiness skips them
"not routed" when the scheduler looks at them next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from engine import routing
from engine.context import StepContext
from engine.errors import describe_exception
from engine.graph import WorkflowGraph
from engine.protocol import RunContext, TieBreakAnswer
from engine.recorder import RunRecorder
from engine.run_state import ActiveDetour, StepRecord
from engine.states import RoutingSignal, RunStatus


@dataclass
class RouteEffects:
    """What a settled step changed besides itself; the scheduler looks at these steps next."""

    reset: list[str] = field(default_factory=list)
    """Steps back to PENDING (a loop's body, a detour target run again, a detour's return)."""


class RouteApplication:
    """Decides and applies the routes of one run's steps."""

    def __init__(self, recorder: RunRecorder, graph: WorkflowGraph, run: RunContext) -> None:
        self.recorder = recorder
        self.graph = graph
        self.run = run

    def needs_decision(self, record: StepRecord, outputs: dict[str, Any]) -> bool:
        """Whether the step has a route to decide: routing, ``terminate``, a detour's return."""
        detour = self.recorder.state.active_detour
        return (
            record.spec.routing is not None
            or outputs.get("terminate") is True
            or (detour is not None and detour.target == record.step_id)
        )

    async def decide(
        self,
        record: StepRecord,
        outputs: dict[str, Any],
        activation: Callable[[dict[str, Any]], dict[str, Any]],
        ctx: StepContext,
    ) -> RoutingSignal | None:
        """The route of a step that just produced ``outputs`` (``activation(outputs)``: the
        CEL variables with them, built only for a step that has a decision to make); None
        when it has none to take."""
        if not self.needs_decision(record, outputs):
            return None
        state = self.recorder.state
        detour = state.active_detour
        decision = routing.decide(
            routing.RouteInput(
                step=record.spec,
                outputs=outputs,
                activation=activation(outputs),
                loop_count=state.loop_counts.get(record.step_id, 0),
                active_detour=detour.declared_by if detour else None,
                returning_from_detour=record.step_id in state.returned_detours,
                step_runs=state.step_runs,
                max_step_runs=self.recorder.step_bound,
            ),
            self.graph,
        )
        if isinstance(decision, RoutingSignal):
            return decision
        answer = await self._ask_tie_breaker(decision, ctx)
        settled = routing.settle_tie_break(decision, answer)
        if isinstance(settled, RoutingSignal):
            return settled
        human = await ctx.interrupt(settled.interrupt_request())
        return routing.settle_human_tie_break(settled, settled.chosen_target(human))

    async def _ask_tie_breaker(
        self, need: routing.TieBreakNeeded, ctx: StepContext
    ) -> TieBreakAnswer:
        """The injected tie-breaker's answer, journaled like a model call; never raises."""
        tie_breaker = self.run.tie_breaker
        request = need.request(self.recorder.run_id, context=ctx.context())

        async def call() -> TieBreakAnswer:
            if tie_breaker is None:
                return TieBreakAnswer(
                    target=None, outcome="error", reasoning="no tie-breaker is configured"
                )
            try:
                return await asyncio.wait_for(tie_breaker(request), timeout=need.timeout_s)
            except TimeoutError:
                return TieBreakAnswer(target=None, outcome="timeout")
            except Exception as error:  # noqa: BLE001 - ADR-004: any tie-breaker failure falls back to the default edge
                return TieBreakAnswer(
                    target=None, outcome="error", reasoning=describe_exception(error)
                )

        answer, _ = await ctx.journaled(
            "tie_breaker",
            call,
            encode=lambda a: a.model_dump(mode="json"),
            decode=TieBreakAnswer.model_validate,
        )
        return cast(TieBreakAnswer, answer)

    def apply(self, record: StepRecord, signal: RoutingSignal, effects: RouteEffects) -> None:
        """Change the run by a decision: loops reset, detours start, termination.

        Saves every step it changes; what it reset goes into ``effects``.
        """
        state = self.recorder.state
        save = self.recorder.save
        step_id = record.step_id
        state.returned_detours.discard(step_id)
        for skipped in signal.skipped_targets:
            state.steps[skipped].not_routed_by |= {step_id}
            save(state.steps[skipped])
        if signal.decision == "terminate":
            if signal.run_status == RunStatus.PARTIAL:
                state.limit_reason = signal.reason or ""
            else:
                cut_off = set(self.graph.descendants(step_id))
                detour = state.active_detour
                if detour is not None and detour.target == step_id:  # no return to its declarer
                    cut_off |= {detour.declared_by, *self.graph.descendants(detour.declared_by)}
                state.record_termination(
                    step_id, cut_off - {step_id}, self.graph.first_in_definition
                )
            return
        target = signal.next_step_id
        if target is None:
            return
        if signal.decision == "loop":
            state.loop_counts[step_id] = state.loop_counts.get(step_id, 0) + 1
            body = self.graph.between(target, step_id)
            for reset_id in body:
                if reset_id != step_id:  # an inner loop counts afresh on each outer pass
                    state.loop_counts.pop(reset_id, None)
                reset = state.steps[reset_id]
                reset.reset(routers_reset=set(body))
                save(reset)
            effects.reset.extend(body)
            return
        if (
            signal.return_to is not None
            and target == signal.return_to
            and signal.decision == "advance"
        ):
            return
        chosen = state.steps[target]
        if chosen.status.settled:
            chosen.reset(routers_reset={step_id})
            effects.reset.append(target)
        chosen.routed_by |= {step_id}
        chosen.not_routed_by -= {step_id}
        chosen.changed()
        save(chosen)
        if signal.decision == "detour" and signal.return_to is not None:
            state.active_detour = ActiveDetour(declared_by=step_id, target=target)

    def after_settle(self, record: StepRecord, effects: RouteEffects) -> None:
        """A settled detour target returns to the step that declared the detour."""
        state = self.recorder.state
        detour = state.active_detour
        if detour is None or detour.target != record.step_id:
            return
        state.active_detour = None
        state.returned_detours.add(detour.declared_by)
        declarer = state.steps[detour.declared_by]
        declarer.reset()
        self.recorder.save(declarer)
        effects.reset.append(declarer.step_id)
