"""The end of a run: its declared outputs, its completion criteria and its final status."""

from __future__ import annotations

from typing import Any, NamedTuple

from engine.conditions import CelEvaluationError, compile_expr
from engine.run_state import TERMINATED_BY, RunState
from engine.states import RunStatus, StepStatus


class Conclusion(NamedTuple):
    status: RunStatus
    reason: str
    missing: list[str]
    """Completion criteria not met: ``output NAME`` and ``step ID``."""
    outputs: dict[str, Any]


def evaluate_outputs(state: RunState) -> tuple[dict[str, Any], list[str]]:
    """The workflow's declared outputs, and the names that could not be evaluated."""
    outputs: dict[str, Any] = {}
    missing: list[str] = []
    if not state.wf.outputs:
        return outputs, missing
    activation = state.activation()
    for name, expr in state.wf.outputs.items():
        try:
            outputs[name] = compile_expr(expr).evaluate(activation)
        except CelEvaluationError:
            missing.append(name)
    return outputs, missing


def conclude(state: RunState) -> Conclusion:
    """The final status of a run whose scheduling has ended and whose steps have all settled
    (engine/lifecycle.py fails any a scheduler left unsettled before it concludes).

    A limit → PARTIAL; a non-optional step that failed → FAILED; completion criteria not
    met → PARTIAL naming what is missing; otherwise COMPLETED — whether a
    ``terminate`` decision ended it early or not.
    """
    wf = state.wf
    outputs, unevaluated = evaluate_outputs(state)
    missing = [
        f"output {name}"
        for name in wf.completion.required_outputs
        if name in unevaluated or outputs.get(name) is None
    ]
    missing += [
        f"step {step_id}"
        for step_id in wf.completion.required_steps
        if state.steps[step_id].status != StepStatus.SUCCEEDED
    ]
    if state.limit_reason:
        return Conclusion(RunStatus.PARTIAL, state.limit_reason, missing, outputs)
    failed = [
        r for r in state.steps.values() if r.status == StepStatus.FAILED and not r.spec.optional
    ]
    if failed:
        first = failed[0]
        reason = f"step {first.step_id} failed: {first.reason}"
        return Conclusion(RunStatus.FAILED, reason, missing, outputs)
    if missing:
        reason = f"completion criteria not met, missing: {', '.join(missing)}"
        return Conclusion(RunStatus.PARTIAL, reason, missing, outputs)
    ended = f"{TERMINATED_BY}{state.terminated_by}" if state.terminated_by else ""
    return Conclusion(RunStatus.COMPLETED, ended, missing, outputs)
