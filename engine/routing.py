"""ADR-004 bounded routing as a pure function (DESIGN §5).

``decide(RouteInput, WorkflowGraph)`` looks at one settled step and returns
either the ``RoutingSignal`` to record and apply, or ``TieBreakNeeded`` when
the decision belongs to the injected tie-breaker. It calls nothing outside
itself: the runner gathers the inputs (outputs, activation, counters), calls
the tie-breaker or a person when asked to, and applies the signal.

Precedence, first rule that decides wins:

1. **Stop conditions** — the safety bound on step executions (the run ends
   PARTIAL), ``routing.terminate_when``, an output ``terminate: true`` (the run
   ends COMPLETED). The remaining steps are the runner's to skip.
2. **CEL conditions** in order; the first that matches chooses its target.
   Then ``detour.when``. An evaluation error counts as not matched and is
   recorded on the decision (ADR-004: fall through).
3. **Static routing** by kind — ``linear``: ``next``; ``loop``: back to the
   loop target; ``branch``: the target keyed by the value of ``branch_on``
   (``conditional`` has nothing static beyond its conditions).
4. **Tie-breaker** — when enabled and two or more valid edges remain. Only
   graph-defined targets are offered.
5. **Default edge** — ``next``; without one the path ends here.

Whatever rule picks a target, the target decides what the choice means: the
loop target is a loop (at ``max_iterations`` the default edge is taken
instead, route ``loop_exhausted``), the detour target is a detour, anything
else is an advance. A detour whose target depends on a step that runs only
after the declaring step could never start: the loader refuses it, and in a
definition stored before that check it is rejected (``detour_rejected``) and the
default edge is taken. Detours are single level: a detour chosen while a detour
is active is rejected and the step takes its default edge (route
``detour_rejected``). The target of the active detour ignores its own routing
(beyond stop conditions) and returns to the declaring step.

Every signal lists ``skipped_targets``: the forward routing targets not
chosen, for the runner to settle SKIPPED "not routed". Loops and detours skip
nothing — the step decides again when it runs next.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.context import InterruptAnswer, InterruptRequest
from engine.graph import WorkflowGraph
from engine.protocol import TieBreakAnswer, TieBreakRequest
from engine.spec import RoutingSpec, StepSpec
from engine.states import EvaluatedCondition, RouteKind, RoutingSignal, RunStatus
from plumbing.frozen import Frozen


@dataclass(frozen=True)
class RouteInput:
    """Everything one routing decision reads; the runner fills it.

    ``activation`` is ``build_activation(...)`` for this step, with its own
    outputs as ``outputs`` and its loop iteration as ``iteration``.
    ``loop_count`` is how many times this step's own loop has gone back.
    ``active_detour`` is the id of the step whose detour is running, or None:
    when this step is that detour's target it returns there; when it is any
    other step, a detour it chooses is rejected (single level).
    ``returning_from_detour`` is True when this step runs again because its
    detour returned: the detour is not taken a second time on this pass.
    ``step_runs`` counts step executions so far in the run (this one
    included); ``max_step_runs`` is the safety bound, by default the
    workflow's ``limits.step_run_bound`` (10 x steps).
    """

    step: StepSpec
    outputs: Mapping[str, Any]
    activation: Mapping[str, Any]
    loop_count: int = 0
    active_detour: str | None = None
    returning_from_detour: bool = False
    step_runs: int = 0
    max_step_runs: int | None = None


@dataclass(frozen=True)
class TieBreakNeeded:
    """The decision goes to the tie-breaker; settle it with ``settle_tie_break``.

    ``candidates`` holds, for each valid target, the signal choosing it would
    produce; ``fallback`` is the default edge.
    """

    step_id: str
    valid_targets: list[str]
    default_target: str
    hint: str
    confidence_threshold: float
    timeout_s: float
    candidates: Mapping[str, RoutingSignal]
    fallback: RoutingSignal
    evaluated_conditions: list[EvaluatedCondition] = field(default_factory=list)
    outputs: Mapping[str, Any] = field(default_factory=dict)
    """The deciding step's outputs, shown to a person asked to break the tie."""

    def request(self, run_id: str, context: str = "") -> TieBreakRequest:
        """What the injected tie-breaker is asked (call it with a ``timeout_s`` timeout)."""
        return TieBreakRequest(
            run_id=run_id,
            step_id=self.step_id,
            valid_targets=list(self.valid_targets),
            default_target=self.default_target,
            hint=self.hint,
            context=context,
            timeout_s=self.timeout_s,
        )


class TieBreakPayload(Frozen):
    """What a person breaking a tie is shown: the tie-breaker interrupt's payload."""

    valid_targets: list[str]
    default_target: str
    suggestion: str | None
    confidence: float | None
    """None when the model gave no usable (finite) confidence."""
    confidence_threshold: float
    reasoning: str
    hint: str
    unsure_because: str
    """Why the model's answer was not taken, in one sentence."""
    outputs: dict[str, Any]
    """The deciding step's outputs."""
    evaluated_conditions: list[EvaluatedCondition]
    """The conditions evaluated before the tie-breaker was asked, in order."""


@dataclass(frozen=True)
class HumanTieBreakNeeded:
    """The model was unsure (confidence below the threshold): a person chooses.

    The runner raises ``interrupt_request()`` through ``ctx.interrupt`` and
    passes the answer to ``settle_human_tie_break``.
    """

    need: TieBreakNeeded
    suggestion: TieBreakAnswer

    def interrupt_request(self) -> InterruptRequest:
        need = self.need
        suggested = self.suggestion.target
        confidence = self.suggestion.confidence
        usable = confidence if math.isfinite(confidence) else None
        stated = (
            f"with confidence {usable:.2f}" if usable is not None else "without a usable confidence"
        )
        threshold = need.confidence_threshold
        unsure_because = (
            f"its confidence {usable:.2f} is below the threshold {threshold:.2f}"
            if usable is not None
            else f"it gave no usable confidence (the threshold is {threshold:.2f})"
        )
        return InterruptRequest(
            kind="tie_breaker",
            prompt=f"Where should '{need.step_id}' go next? The model suggests "
            f"'{suggested}' {stated}.",
            payload=TieBreakPayload(
                valid_targets=list(need.valid_targets),
                default_target=need.default_target,
                suggestion=suggested,
                confidence=usable,
                confidence_threshold=threshold,
                reasoning=self.suggestion.reasoning,
                hint=need.hint,
                unsure_because=unsure_because,
                outputs=dict(need.outputs),
                evaluated_conditions=list(need.evaluated_conditions),
            ).model_dump(mode="json"),
            options=list(need.valid_targets),
            default=InterruptAnswer(
                action="choose", value=need.default_target, automatic=True, note="default edge"
            ),
        )

    def chosen_target(self, answer: InterruptAnswer) -> str | None:
        """The target a person's answer names: ``choose`` names one, ``approve`` takes the suggestion."""
        if answer.action == "choose" and isinstance(answer.value, str):
            return answer.value
        if answer.action == "approve":
            return self.suggestion.target
        return None


# -- the decision ------------------------------------------------------------------


def decide(inp: RouteInput, graph: WorkflowGraph) -> RoutingSignal | TieBreakNeeded:
    """Route one settled step by ADR-004's precedence (see the module docstring)."""
    return _Decision(inp, graph).run()


class _Decision:
    def __init__(self, inp: RouteInput, graph: WorkflowGraph) -> None:
        self.inp = inp
        self.graph = graph
        self.spec = inp.step
        self.routing = inp.step.routing or RoutingSpec()
        self.evaluated: list[EvaluatedCondition] = []
        ancestors = (
            graph.ancestors(self.spec.id)
            if self.spec.id in graph.workflow.step_ids
            else frozenset()
        )
        loop_target = self.routing.loop.target if self.routing.loop else None
        self.forward_targets = [
            t
            for t in self.routing.targets()
            if t != loop_target and t not in ancestors and t != self.spec.id
        ]
        self.in_detour = (
            inp.active_detour is not None
            and graph.detour_declarer(self.spec.id) == inp.active_detour
        )

    # -- precedence ---------------------------------------------------------------
    def run(self) -> RoutingSignal | TieBreakNeeded:
        stop = self._stop()
        if stop is not None:
            return stop
        if self.in_detour:
            return self._inside_detour()
        for index, condition in enumerate(self.routing.conditions, start=1):
            if self._matches(condition.expr, condition.target):
                chosen = self._take(
                    condition.target,
                    "condition",
                    f"condition {index} matched: {condition.expr} → {condition.target}",
                )
                if chosen is not None:
                    return chosen
        detour = self.routing.detour
        if (
            detour is not None
            and detour.when is not None
            and self._matches(detour.when, detour.target)
        ):
            chosen = self._take(detour.target, "detour", f"detour.when matched: {detour.when}")
            if chosen is not None:
                return chosen
        static = self._static()
        if static is not None:
            return static
        tie = self._tie_break()
        if tie is not None:
            return tie
        return self._default("default", "no condition matched")

    def _stop(self) -> RoutingSignal | None:
        inp = self.inp
        workflow = self.graph.workflow
        bound = (
            inp.max_step_runs
            if inp.max_step_runs is not None
            else workflow.limits.step_run_bound(len(workflow.steps))
        )
        if inp.step_runs >= bound:
            return self._terminate(
                f"safety bound reached: {inp.step_runs} step executions (bound {bound}, 10 x steps at most)",
                RunStatus.PARTIAL,
            )
        if self.routing.terminate_when is not None and self._matches(
            self.routing.terminate_when, None
        ):
            return self._terminate(
                f"terminate_when matched: {self.routing.terminate_when}", RunStatus.COMPLETED
            )
        if inp.outputs.get("terminate") is True:
            return self._terminate("the step's outputs set terminate: true", RunStatus.COMPLETED)
        return None

    def _inside_detour(self) -> RoutingSignal:
        """The active detour's target: only a nested detour attempt is looked at, and rejected."""
        declarer = self.inp.active_detour
        assert declarer is not None
        detour = self.routing.detour
        attempted: str | None = None
        if detour is not None:
            for condition in self.routing.conditions:
                if condition.target == detour.target and self._matches(
                    condition.expr, condition.target
                ):
                    attempted = detour.target
                    break
            if (
                attempted is None
                and detour.when is not None
                and self._matches(detour.when, detour.target)
            ):
                attempted = detour.target
        skipped = [t for t in self.forward_targets if t != declarer]
        if attempted is not None:
            return self._signal(
                "advance",
                declarer,
                "detour_rejected",
                f"nested detour to {attempted} rejected (single level, ADR-004): "
                f"the detour of {declarer} is active; returning to {declarer}",
                skipped=skipped,
                return_to=declarer,
            )
        return self._signal(
            "advance",
            declarer,
            "detour_return",
            f"detour done: returning to {declarer}",
            skipped=skipped,
            return_to=declarer,
        )

    def _static(self) -> RoutingSignal | None:
        routing = self.routing
        if routing.kind == "linear" and routing.next is not None:
            return self._take(routing.next, "next", f"static next → {routing.next}")
        if routing.kind == "loop" and routing.loop is not None:
            return self._take(routing.loop.target, "loop", f"loop → {routing.loop.target}")
        if routing.kind == "branch":
            return self._branch()
        return None

    def _branch(self) -> RoutingSignal | None:
        from engine.conditions import compile_expr  # CEL once a route is evaluated

        expr = self.routing.branch_on
        try:
            value = compile_expr(expr).evaluate(self.inp.activation)
        except Exception as error:  # CelEvaluationError or a syntax error: not matched (ADR-004)
            self.evaluated.append(EvaluatedCondition(expr=expr, matched=False, error=str(error)))
            return None
        key = branch_key(value)
        target = self.routing.branches.get(key)
        self.evaluated.append(
            EvaluatedCondition(expr=f"{expr} == {key!r}", target=target, matched=target is not None)
        )
        if target is None:
            return None
        return self._take(target, "branch", f"branch {expr} = {key!r} → {target}")

    def _tie_break(self) -> TieBreakNeeded | None:
        routing = self.routing
        tie = routing.tie_breaker
        if tie is None or not tie.enabled or routing.next is None:
            return None
        offered = [t for t in (tie.valid_targets or routing.targets()) if self._available(t)]
        offered = list(dict.fromkeys(offered))
        if len(offered) < 2:
            return None
        candidates: dict[str, RoutingSignal] = {}
        for target in offered:
            signal = self._take(target, "tie_breaker", f"tie-breaker chose {target}")
            assert signal is not None
            candidates[target] = signal.model_copy(update={"tie_breaker_used": True})
        fallback = self._default("default", "tie-breaker fell back").model_copy(
            update={"tie_breaker_used": True, "needs_human": True}
        )
        return TieBreakNeeded(
            step_id=self.spec.id,
            valid_targets=offered,
            default_target=routing.next,
            hint=tie.prompt_hint,
            confidence_threshold=tie.confidence_threshold,
            timeout_s=tie.timeout_s,
            candidates=candidates,
            fallback=fallback,
            evaluated_conditions=list(self.evaluated),
            outputs=dict(self.inp.outputs),
        )

    # -- what a chosen target means ---------------------------------------------------
    def _available(self, target: str) -> bool:
        routing = self.routing
        if routing.loop is not None and target == routing.loop.target:
            return self.inp.loop_count < routing.loop.max_iterations
        if routing.detour is not None and target == routing.detour.target:
            return not self.inp.returning_from_detour and self.inp.active_detour is None
        return True

    def _take(self, target: str, route: RouteKind, reason: str) -> RoutingSignal | None:
        """The signal for choosing ``target``; None when it is a detour already taken on this pass."""
        routing = self.routing
        loop = routing.loop
        if loop is not None and target == loop.target:
            if self.inp.loop_count >= loop.max_iterations:
                return self._default(
                    "loop_exhausted",
                    f"{reason}; loop to {target} exhausted ({self.inp.loop_count} of {loop.max_iterations})",
                )
            return self._signal(
                "loop",
                target,
                "loop",
                f"{reason}; going back {self.inp.loop_count + 1} of {loop.max_iterations}",
            )
        detour = routing.detour
        if detour is not None and target == detour.target:
            if self.inp.returning_from_detour:
                self.evaluated.append(
                    EvaluatedCondition(
                        expr=f"detour to {target}",
                        target=target,
                        matched=False,
                        error="the detour already returned to this step; not taken again on this pass",
                    )
                )
                return None
            waits_on = self.graph.detour_blockers(self.spec.id, target)
            if waits_on:
                return self._default(
                    "detour_rejected",
                    f"{reason}; detour to {target} rejected: it depends on "
                    f"{', '.join(waits_on)}, which cannot run before {self.spec.id} has passed",
                )
            if self.inp.active_detour is not None:
                return self._default(
                    "detour_rejected",
                    f"{reason}; detour to {target} rejected (single level, ADR-004): "
                    f"the detour of {self.inp.active_detour} is active",
                )
            return self._signal(
                "detour",
                target,
                "detour",
                f"{reason}; detour to {target}",
                return_to=self.spec.id if detour.returns else None,
            )
        return self._signal("advance", target, route, reason, skipped=self._skip_all_but(target))

    def _default(self, route: RouteKind, reason: str) -> RoutingSignal:
        target = self.routing.next
        if target is None:
            return self._signal(
                "end",
                None,
                "end" if route == "default" else route,
                f"{reason}; no default edge: the path ends here",
                skipped=self._skip_all_but(None),
            )
        return self._signal(
            "advance",
            target,
            route,
            f"{reason}; default edge → {target}",
            skipped=self._skip_all_but(target),
        )

    def _terminate(self, reason: str, status: RunStatus) -> RoutingSignal:
        return self._signal(
            "terminate",
            None,
            "terminate",
            reason,
            skipped=self._skip_all_but(None),
            run_status=status,
        )

    def _skip_all_but(self, chosen: str | None) -> list[str]:
        detour = self.routing.detour
        ran = detour.target if detour is not None and self.inp.returning_from_detour else None
        return [t for t in self.forward_targets if t != chosen and t != ran]

    def _matches(self, expr: str, target: str | None) -> bool:
        from engine.conditions import compile_expr, evaluate_bool  # CEL once a route is evaluated

        try:
            matched, message = evaluate_bool(compile_expr(expr), self.inp.activation)
        except Exception as error:  # a syntax error here means the loader was bypassed
            matched, message = False, str(error)
        self.evaluated.append(
            EvaluatedCondition(expr=expr, target=target, matched=matched, error=message)
        )
        return matched

    def _signal(
        self,
        decision: Any,
        target: str | None,
        route: RouteKind,
        reason: str,
        *,
        skipped: list[str] | None = None,
        return_to: str | None = None,
        run_status: RunStatus | None = None,
    ) -> RoutingSignal:
        return RoutingSignal(
            decision=decision,
            next_step_id=target,
            route=route,
            reason=reason,
            evaluated_conditions=list(self.evaluated),
            skipped_targets=skipped or [],
            return_to=return_to,
            run_status=run_status,
        )


def branch_key(value: Any) -> str:
    """How a ``branch_on`` value is looked up among ``branches`` keys (YAML keys are text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- settling a tie-break -------------------------------------------------------------


def settle_tie_break(
    need: TieBreakNeeded, answer: TieBreakAnswer | None, *, timed_out: bool = False
) -> RoutingSignal | HumanTieBreakNeeded:
    """The signal for the tie-breaker's answer, or a person's turn when it is unsure.

    No answer, a timeout, an error or a target outside ``valid_targets`` →
    the default edge with ``needs_human`` set (ADR-004: degrade to
    deterministic, never block). Confidence below the threshold, or not a
    number at all (NaN) → ``HumanTieBreakNeeded``.
    """
    if timed_out or answer is None or answer.outcome == "timeout":
        return _fallback(need, f"tie-breaker timed out after {need.timeout_s:g} s")
    if answer.outcome == "error":
        return _fallback(need, f"tie-breaker failed: {answer.reasoning or 'error'}")
    if (
        answer.outcome == "invalid_answer"
        or answer.target is None
        or answer.target not in need.candidates
    ):
        return _fallback(
            need,
            f"tie-breaker answered {answer.target!r}, not one of {', '.join(need.valid_targets)}",
        )
    if not answer.confidence >= need.confidence_threshold:  # NaN is not confident either
        return HumanTieBreakNeeded(need=need, suggestion=answer)
    signal = need.candidates[answer.target]
    reasoning = f": {answer.reasoning}" if answer.reasoning else ""
    return signal.model_copy(
        update={
            "confidence": answer.confidence,
            "reason": f"tie-breaker chose {answer.target} (confidence {answer.confidence:.2f}){reasoning}",
        }
    )


def settle_human_tie_break(
    human: HumanTieBreakNeeded | TieBreakNeeded, chosen: str | None
) -> RoutingSignal:
    """The signal for a person's choice; no or an invalid choice → the default edge."""
    need = human.need if isinstance(human, HumanTieBreakNeeded) else human
    if chosen is None or chosen not in need.candidates:
        return _fallback(
            need,
            f"a person was asked and chose {chosen!r}, not one of {', '.join(need.valid_targets)}",
        )
    suggestion = ""
    if isinstance(human, HumanTieBreakNeeded):
        confidence = human.suggestion.confidence
        at = f"at {confidence:.2f}" if math.isfinite(confidence) else "without a usable confidence"
        suggestion = f" (the model suggested {human.suggestion.target} {at})"
    return need.candidates[chosen].model_copy(
        update={
            "needs_human": True,
            "confidence": 1.0,
            "reason": f"a person chose {chosen}{suggestion}",
        }
    )


def _fallback(need: TieBreakNeeded, why: str) -> RoutingSignal:
    """The default edge; ``need.fallback`` already says a person should look (needs_human)."""
    return need.fallback.model_copy(
        update={"reason": f"{why}; default edge → {need.default_target}", "confidence": 0.0}
    )


__all__ = [
    "HumanTieBreakNeeded",
    "RouteInput",
    "TieBreakNeeded",
    "branch_key",
    "decide",
    "settle_human_tie_break",
    "settle_tie_break",
]
