"""CEL compile and evaluation cost, so routing cost is known (issue 2).

Prints, measured side by side in one run: µs per compile of typical conditions
(uncached), µs per evaluation, µs to build an activation, µs per full routing
decision, and ms to load the shipped deep-research workflow. Nothing is asserted.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from engine.conditions import StepView, _compile_cached, build_activation, compile_expr
from engine.graph import WorkflowGraph
from engine.loader import WorkflowLoadError, load_workflow
from engine.routing import RouteInput, decide
from engine.spec import StepSpec, WorkflowDefinition
from tui.launch.steps import register_steps
from tui.launch.workspace import Workspace

TYPICAL = {
    "comparison": "outputs.confidence < 0.7",
    "int vs double": "iteration >= 2",
    "and of two": "outputs.status == 'VERIFIED' && iteration >= 2",
    "has + field": "has(steps.review.outputs.score) && steps.review.outputs.score >= 0.8",
    "size()": "size(steps.review.history) >= 2",
    "macro": "steps.review.outputs.claims.all(c, c.verified)",
    "round gate": "inputs.max_rounds >= 3 && steps.supervisor_r2.outputs.decision == 'continue'",
}


def per_call_us(action: Callable[[], object], repeat: int) -> float:
    """Median of five batches, in µs per call."""
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(repeat):
            action()
        samples.append((time.perf_counter() - started) / repeat * 1e6)
    return statistics.median(samples)


def activation(step_count: int) -> dict:
    steps = {
        f"s{i}": StepView(
            status="SUCCEEDED", outputs={"score": 0.5, "text": "x" * 200}, iteration=0
        )
        for i in range(step_count)
    }
    steps["review"] = StepView(
        status="SUCCEEDED",
        iteration=2,
        outputs={"score": 0.9, "claims": [{"verified": True}] * 5},
        history=[{"score": 0.4}, {"score": 0.6}],
    )
    steps["supervisor_r2"] = StepView(status="SUCCEEDED", outputs={"decision": "continue"})
    return build_activation(
        inputs={"max_rounds": 4, "query": "q"},
        steps=steps,
        outputs={"confidence": 0.65, "status": "VERIFIED"},
        iteration=2,
    )


def review_workflow() -> WorkflowDefinition:
    return WorkflowDefinition(
        name="bench",
        steps=[
            StepSpec(id="draft", uses="demo.any"),
            StepSpec(
                id="review",
                uses="demo.any",
                depends_on=["draft"],
                routing={
                    "kind": "conditional",
                    "next": "publish",
                    "terminate_when": "outputs.status == 'ABORT'",
                    "conditions": [
                        {
                            "expr": "outputs.status == 'VERIFIED' && iteration >= 3",
                            "target": "publish",
                        },
                        {"expr": "outputs.confidence < 0.7", "target": "draft"},
                    ],
                    "loop": {"target": "draft", "max_iterations": 3},
                },
            ),
            StepSpec(id="publish", uses="demo.any", depends_on=["review"]),
        ],
    )


def main() -> None:
    print(f"{'expression':<16} {'compile µs':>11} {'evaluate µs':>12}")
    act = activation(30)
    for label, expr in TYPICAL.items():
        compile_us = per_call_us(lambda expr=expr: _compile_cached.__wrapped__(expr), 40)
        compiled = compile_expr(expr)
        evaluate_us = per_call_us(lambda compiled=compiled: compiled.evaluate(act), 200)
        print(f"{label:<16} {compile_us:>11.0f} {evaluate_us:>12.0f}")
    print(
        f"cached compile_expr lookup: {per_call_us(lambda: compile_expr(TYPICAL['comparison']), 2000):.2f} µs"
    )

    for count in (10, 40):
        views = {
            f"s{i}": StepView(status="SUCCEEDED", outputs={"score": 0.5}) for i in range(count)
        }
        for view in views.values():
            _ = view.cel
        build_us = per_call_us(
            lambda views=views: build_activation(inputs={"q": "x"}, steps=views, iteration=1), 300
        )
        print(f"build_activation over {count} settled steps (views cached): {build_us:.0f} µs")

    wf = review_workflow()
    graph = WorkflowGraph(wf)
    route_input = RouteInput(
        step=wf.step("review"),
        outputs={"confidence": 0.65, "status": "DRAFT"},
        activation=build_activation(
            inputs={}, steps={}, iteration=1, outputs={"confidence": 0.65, "status": "DRAFT"}
        ),
        loop_count=1,
    )
    decision = decide(route_input, graph)
    print(
        f"one routing decision (terminate_when + 2 conditions → {decision.route}): "
        f"{per_call_us(lambda: decide(route_input, graph), 200):.0f} µs"
    )

    shipped = Path(__file__).resolve().parents[2] / "workflows" / "deep_research.yaml"
    with tempfile.TemporaryDirectory() as empty:
        register_steps(Workspace.at(empty))
    _compile_cached.cache_clear()
    try:
        started = time.perf_counter()
        loaded = load_workflow(shipped)
        cold_ms = (time.perf_counter() - started) * 1e3
    except WorkflowLoadError as error:
        print(f"load {shipped.name}: not loadable here ({error.problems[0]})")
        return
    warm_ms = per_call_us(lambda: load_workflow(shipped), 5) / 1e3
    print(
        f"load {shipped.name} ({len(loaded.steps)} steps): {cold_ms:.0f} ms cold (CEL compiled), "
        f"{warm_ms:.0f} ms warm (CEL cached)"
    )


if __name__ == "__main__":
    main()
