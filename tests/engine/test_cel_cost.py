"""The cost limit of a CEL evaluation (engine/cel_budget.py): a hostile expression stops in
bounded work, with one line naming it, wherever it is evaluated — ``validate``'s constant
inputs, a ``when``, a routing condition — and a ``when`` past the limit counts as not
matched (ADR-004), the same on both engines and the reference interpreter.

The work is asserted by the evaluator's own count, never by a clock."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.cel_budget import MAX_EVALUATION_STEPS, MAX_LIST_LENGTH, MAX_TEXT_LENGTH
from engine.conditions import CelEvaluationError, build_activation, compile_expr, evaluate_bool
from engine.errors import WorkflowLoadError
from engine.graph import WorkflowGraph
from engine.loader import load_workflow_text
from engine.routing import RouteInput, decide
from engine.states import RoutingSignal
from tests.engine.reference.differential import run_all
from tests.engine.reference.expressions import matches as reference_matches
from tests.engine.test_semantics import ENGINES, INPUTS, execute, load, probe

DIGITS = "[0,1,2,3,4,5,6,7,8,9]"


def nested_maps(depth: int) -> str:
    """``size()`` of ten-item maps nested ``depth`` deep: 10**depth innermost evaluations."""
    inner = "1"
    for variable in "abcdefgh"[:depth]:
        inner = f"{DIGITS}.map({variable}, {inner})"
    return f"size({inner})"


def doubled_text(levels: int) -> str:
    """A text doubled at every level, through maps over one-item lists."""
    body = f"t{levels}"
    for level in range(levels, 0, -1):
        body = f"[t{level - 1} + t{level - 1}].map(t{level}, {body})"
    return f"size(['ab'].map(t0, {body})[0])"


LIMIT = f"stopped after {MAX_EVALUATION_STEPS:,} evaluation steps, the limit for one expression"


def test_six_nested_maps_stop_at_the_step_limit() -> None:
    """The issue's example: a million innermost evaluations; it stops at the limit exactly."""
    with pytest.raises(CelEvaluationError) as raised:
        compile_expr(nested_maps(6)).evaluate({})
    assert raised.value.message == LIMIT
    assert raised.value.steps == MAX_EVALUATION_STEPS
    assert raised.value.expr == nested_maps(6)


def test_the_limit_is_per_evaluation_and_leaves_ordinary_work_alone() -> None:
    compiled = compile_expr(nested_maps(3))  # a thousand innermost evaluations
    assert compiled.evaluate({}) == 10
    assert compiled.evaluate({}) == 10  # a second evaluation has a budget of its own


def test_a_text_or_a_list_built_past_its_length_stops_at_the_first_join_past_it() -> None:
    with pytest.raises(CelEvaluationError) as raised:
        compile_expr(doubled_text(20)).evaluate({})
    # 'ab' doubled 19 times is 1,048,576 characters: the first join past the limit
    assert raised.value.message == (
        f"built a text of 1,048,576 characters; the limit for one expression is {MAX_TEXT_LENGTH:,}"
    )
    assert compile_expr(doubled_text(10)).evaluate({}) == 1  # 2,048 characters are fine
    listed = compile_expr("size([xs].map(a, [a + a].map(b, [b + b].map(c, [c + c].map(d, d)))))")
    with pytest.raises(CelEvaluationError) as raised:
        listed.evaluate({"xs": list(range(20_000))})
    assert raised.value.message == (
        f"built a list of 160,000 items; the limit for one expression is {MAX_LIST_LENGTH:,}"
    )
    assert raised.value.steps is None  # a length stopped it, not the step count


@pytest.mark.parametrize(
    ("kind", "half"),
    [("text", "a" * (MAX_TEXT_LENGTH // 2)), ("bytes", b"a" * (MAX_TEXT_LENGTH // 2))],
)
def test_a_text_of_the_limit_is_built_and_one_more_character_is_not(kind: str, half: Any) -> None:
    join = compile_expr("size(a + b)")
    assert join.evaluate({"a": half, "b": half}) == MAX_TEXT_LENGTH
    with pytest.raises(CelEvaluationError) as raised:
        join.evaluate({"a": half, "b": half + half[:1]})
    assert raised.value.message == (
        f"built a text of {MAX_TEXT_LENGTH + 1:,} characters; the limit for one expression"
        f" is {MAX_TEXT_LENGTH:,}"
    )


def test_a_list_of_the_limit_is_built_and_one_more_item_is_not() -> None:
    half = list(range(MAX_LIST_LENGTH // 2))
    join = compile_expr("size(a + b)")
    assert join.evaluate({"a": half, "b": half}) == MAX_LIST_LENGTH
    with pytest.raises(CelEvaluationError, match=f"built a list of {MAX_LIST_LENGTH + 1:,} items"):
        join.evaluate({"a": half, "b": [*half, 0]})


def test_validate_refuses_a_costly_constant_input_in_one_line() -> None:
    """``validate`` evaluates an input that reads nothing: within the limit, and the problem
    is one line naming the step, the input and the expression."""
    text = json.dumps(
        {
            "name": "costly",
            "steps": [{"id": "s", "uses": "demo.echo", "inputs": {"n": nested_maps(6)}}],
        }
    )
    with pytest.raises(WorkflowLoadError) as raised:
        load_workflow_text(text, source="costly.yaml")
    problems = str(raised.value).splitlines()
    assert len(problems) == 1
    assert problems[0].startswith("costly.yaml:1:")
    assert f"step 's': inputs.n ({nested_maps(6)}) cannot be evaluated: {LIMIT}" in problems[0]


def test_a_costly_when_is_not_matched_on_both_engines_and_the_reference() -> None:
    """ADR-004: an evaluation error in a condition counts as not matched and is recorded —
    going past the limit is one. The step is skipped with the limit in its reason; what
    follows runs by its trigger rule; the run completes."""
    when = f"{nested_maps(6)} > 0"
    wf = load([probe("first"), probe("costly", depends_on=["first"], when=when), probe("last")])
    assert not reference_matches(when, {})
    found = run_all(wf, INPUTS)
    expected = {"first": "SUCCEEDED", "costly": "SKIPPED", "last": "SUCCEEDED"}
    for name in ("reference", "kahn", "langgraph"):
        assert found[name].status == "COMPLETED", name
        assert {k: v[0] for k, v in found[name].steps.items()} == expected, name
    assert found["order_violations"] == [] and found["canonical"] == []


def test_a_costly_when_names_the_expression_and_the_limit_in_the_step_reason() -> None:
    when = f"{nested_maps(6)} > 0"
    wf = load([probe("costly", when=when)])
    for engine in ENGINES:
        result, store = execute(engine, wf, inputs=INPUTS)
        reason = store.step_results(result.run_id)["costly"].reason
        assert reason == f"when is false: {when} ({LIMIT})", engine


def test_a_costly_routing_condition_falls_through_with_the_error_recorded() -> None:
    wf = load(
        [
            probe(
                "router",
                routing={
                    "kind": "conditional",
                    "next": "cheap",
                    "conditions": [{"expr": f"{nested_maps(6)} > 0", "target": "costly"}],
                },
            ),
            probe("costly"),
            probe("cheap"),
        ]
    )
    activation = build_activation(inputs={}, steps={})
    signal = decide(
        RouteInput(step=wf.steps[0], outputs={}, activation=activation), WorkflowGraph(wf)
    )
    assert isinstance(signal, RoutingSignal)
    assert (signal.next_step_id, signal.route) == ("cheap", "default")
    assert [(c.matched, c.error) for c in signal.evaluated_conditions] == [(False, LIMIT)]


def test_evaluate_bool_turns_the_limit_into_not_matched() -> None:
    matched, error = evaluate_bool(compile_expr(f"{nested_maps(6)} > 0"), {})
    assert (matched, error) == (False, LIMIT)
