"""CEL compile and evaluation cost, so routing cost is known (issues 2 and 26).

Prints, measured side by side in one run, per typical condition: µs to compile the first
text of its shape (parsed), another text of the same shape (lexed, its parse and analysis
shared: engine/cel_parser.py), the first evaluation of a compiled text (its tree is parsed
again then: compiling keeps none), an evaluation within the cost limit
(engine/cel_budget.py), and the same evaluation on cel-python's own interpreter, without
the limit. Then µs to build an activation from a run's kept ``steps`` map (StepsMap) and
from every step's view, at 10 and 1,000 steps; µs per full routing decision; and ms to
load the shipped deep-research workflow. Nothing is asserted.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import celpy

from engine import cel_analysis, cel_parser, conditions
from engine.conditions import (
    StepsMap,
    StepView,
    _compile_cached,
    build_activation,
    compile_expr,
)
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


def forget_shapes() -> None:
    """Compile as the first text of its shape would (the shape caches emptied)."""
    _compile_cached.cache_clear()
    cel_parser._SHAPES.clear()
    for cache in (cel_analysis._DEPTHS, cel_analysis._DECISIVE, cel_analysis._ANALYSES):
        cache.clear()


class SameShape:
    """Other texts of one expression's shape: it with more and more spaces at its end (the
    tokens, and what they read, stay the same)."""

    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.spaces = 0

    def __call__(self) -> str:
        self.spaces += 1
        return self.expr + " " * self.spaces


_PLAIN = celpy.Environment()
"""cel-python's own interpreter, without the cost limit (side by side with ours)."""


def main() -> None:
    print(
        f"{'expression':<14} {'new shape':>9} {'same shape':>10} {'1st eval':>8}"
        f" {'evaluate':>8} {'no limit':>8}   (µs)"
    )
    act = activation(30)
    for label, expr in TYPICAL.items():

        def new_shape(expr: str = expr) -> None:
            forget_shapes()
            compile_expr(expr)

        new_us = per_call_us(new_shape, 20)
        compile_expr(expr)
        texts = SameShape(expr)
        same_us = per_call_us(lambda texts=texts: compile_expr(texts()), 40)
        first_us = (
            per_call_us(lambda texts=texts: compile_expr(texts()).evaluate(act), 40) - same_us
        )
        compiled = compile_expr(expr)
        evaluate_us = per_call_us(lambda compiled=compiled: compiled.evaluate(act), 200)
        tree = conditions._tree(expr)
        plain = _PLAIN.program(tree, functions=conditions._FUNCTIONS)
        plain_us = per_call_us(lambda plain=plain: plain.evaluate(act), 200)
        print(
            f"{label:<14} {new_us:>9.0f} {same_us:>10.0f} {first_us:>8.0f}"
            f" {evaluate_us:>8.0f} {plain_us:>8.0f}"
        )
    print(
        f"cached compile_expr lookup: {per_call_us(lambda: compile_expr(TYPICAL['comparison']), 2000):.2f} µs"
    )

    for count in (10, 1000):
        views = {
            f"s{i}": StepView(status="SUCCEEDED", outputs={"score": 0.5}) for i in range(count)
        }
        kept = StepsMap(views)
        kept_us = per_call_us(
            lambda kept=kept: build_activation(inputs={"q": "x"}, steps=kept, iteration=1), 300
        )
        built_us = per_call_us(
            lambda views=views: build_activation(inputs={"q": "x"}, steps=views, iteration=1), 30
        )
        print(
            f"build_activation at {count} settled steps: {kept_us:.0f} µs from the run's kept"
            f" map, {built_us:.0f} µs from every step's view"
        )

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
