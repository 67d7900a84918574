"""Conformance: the Kahn and LangGraph engines give the same canonical results.

Canonical (engine/canonical.py): per step its own events and results, the route
decisions, the final statuses and outputs, and the dependency order — never the
interleaving of unrelated steps. Three oracles meet here: the two engines, and
for random DAGs a small pure function (tests/engine/langgraph_cases.py).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings

from engine.canonical import compare
from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow, load_workflow_text
from engine.spec import WorkflowDefinition
from engine.store import InMemoryRunStore
from tests.engine.langgraph_cases import (
    TRIGGERS,
    WORKFLOWS,
    DagCase,
    canonical_of,
    dag_cases,
    demo_workflows,
    expected_skipped,
    expected_statuses,
    run_case,
    trigger_outcome,
)

EXAMPLES = 300 if os.environ.get("CI") else 120


async def approve(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    return InterruptAnswer(action="approve", automatic=True, note="conformance")


def both(wf: WorkflowDefinition, **context: Any) -> tuple[Any, Any, list[Any]]:
    """Run ``wf`` on both engines; (kahn canonical, langgraph canonical, differences)."""

    async def go() -> tuple[Any, Any]:
        store = InMemoryRunStore()
        _, kahn = await run_case(KahnEngine(), wf, store, **context)
        _, graph = await run_case(LangGraphEngine(), wf, store, **context)
        return kahn, graph

    kahn, graph = asyncio.run(go())
    return kahn, graph, compare(kahn, graph)


def test_the_demo_suite_is_not_empty() -> None:
    names = {p.stem for p in demo_workflows()}
    assert {
        "fan_out",
        "approval",
        "microloop",
        "detour",
        "conditional",
        "value_branch",
        "terminate",
    } <= names


@pytest.mark.parametrize("path", demo_workflows(), ids=lambda p: p.stem)
def test_demo_workflow_conforms(path: Path) -> None:
    wf = load_workflow(path)
    kahn, graph, differences = both(wf, responder=approve)
    assert differences == [], "\n".join(
        f"{d.where}: {d.left!r} != {d.right!r}" for d in differences
    )
    assert kahn.order_violations == [] and graph.order_violations == []
    assert kahn.status not in ("UNFINISHED", "WAITING")
    assert set(kahn.step_statuses) == set(wf.step_ids)


def test_routes_are_compared_and_agree_on_a_loop() -> None:
    wf = load_workflow(WORKFLOWS / "microloop.yaml")
    kahn, graph, differences = both(wf)
    assert differences == []
    decisions = [signal["decision"] for signal in graph.routes["critic"]]
    assert decisions[-1] == "advance" and decisions.count("loop") >= 1
    assert graph.routes == kahn.routes


# -- the trigger-rule table ------------------------------------------------------------------

_UPSTREAM = {"ok": "SUCCEEDED", "bad": "FAILED", "off": "SKIPPED"}
_SUBSETS = [
    ("ok",),
    ("bad",),
    ("off",),
    ("ok", "bad"),
    ("ok", "off"),
    ("bad", "off"),
    ("ok", "bad", "off"),
]


def trigger_table_workflow(rule: str) -> str:
    steps: list[dict[str, Any]] = [
        {"id": "ok", "uses": "demo.echo", "config": {"set": {"v": 1}}},
        {"id": "bad", "uses": "demo.fail", "optional": True},
        {"id": "off", "uses": "demo.echo", "when": "false"},
    ]
    for subset in _SUBSETS:
        steps.append(
            {
                "id": "t_" + "_".join(subset),
                "uses": "demo.gather",
                "depends_on": list(subset),
                "trigger": rule,
            }
        )
    return json.dumps({"name": f"trigger_{rule}", "steps": steps})


@pytest.mark.parametrize("rule", TRIGGERS)
def test_trigger_rule_table(rule: str) -> None:
    wf = load_workflow_text(trigger_table_workflow(rule), source=f"trigger_{rule}.yaml")
    kahn, graph, differences = both(wf)
    assert differences == []
    for subset in _SUBSETS:
        outcome = trigger_outcome(rule, [_UPSTREAM[name] for name in subset])
        expected = "SUCCEEDED" if outcome == "RUN" else outcome
        assert graph.step_statuses["t_" + "_".join(subset)] == expected, (rule, subset)


def test_the_oracle_knows_the_airflow_table() -> None:
    assert trigger_outcome("none_failed_min_one_success", ["SKIPPED", "SKIPPED"]) == "SKIPPED"
    assert (
        trigger_outcome("none_failed_min_one_success", ["SUCCEEDED", "FAILED"]) == "UPSTREAM_FAILED"
    )
    assert trigger_outcome("none_failed", ["SKIPPED"]) == "RUN"
    assert trigger_outcome("all_success", ["SUCCEEDED", "SKIPPED"]) == "SKIPPED"
    assert trigger_outcome("one_failed", ["SUCCEEDED", "UPSTREAM_FAILED"]) == "RUN"
    assert trigger_outcome("one_success", ["FAILED", "SKIPPED"]) == "UPSTREAM_FAILED"
    assert trigger_outcome("all_done", ["FAILED"]) == "RUN"


# -- random DAGs, three oracles ----------------------------------------------------------------


def check_case(case: DagCase) -> None:
    wf = case.workflow()
    kahn, graph, differences = both(wf)
    assert differences == [], "\n".join(
        f"{d.where}: {d.left!r} != {d.right!r}" for d in differences
    )
    assert kahn.order_violations == [] and graph.order_violations == []
    expected = expected_statuses(case)
    assert graph.step_statuses == expected
    assert {
        s for s, status in kahn.step_statuses.items() if status == "SKIPPED"
    } == expected_skipped(case)
    if case.loop is not None and expected[case.step_id(case.loop[0])] == "SUCCEEDED":
        router = case.step_id(case.loop[0])
        assert [r["decision"] for r in graph.routes[router]].count("loop") == case.loop[2]


@settings(max_examples=EXAMPLES)
@given(dag_cases())
def test_random_dags_conform(case: DagCase) -> None:
    check_case(case)


def test_a_loop_inside_a_fan_in_conforms() -> None:
    case = DagCase(
        size=5,
        deps=((), (0,), (0,), (1, 2), (3,)),
        triggers=("none_failed_min_one_success",) * 5,
        loop=(3, 1, 2),
    )
    check_case(case)


def test_a_failure_inside_a_loop_body_conforms() -> None:
    case = DagCase(
        size=4,
        deps=((), (0,), (1,), (2,)),
        triggers=("all_done", "all_success", "all_done", "one_failed"),
        failing=frozenset({1}),
        loop=(2, 0, 2),
    )
    check_case(case)


# -- metamorphic -------------------------------------------------------------------------------


def _reversed(wf_text: str) -> str:
    data = yaml.safe_load(wf_text)
    data["steps"] = list(reversed(data["steps"]))
    return json.dumps(data)


def _with_noop(wf_text: str) -> str:
    data = yaml.safe_load(wf_text)
    data["steps"].append({"id": "zz_noop", "uses": "demo.echo", "config": {"set": {"noop": True}}})
    return json.dumps(data)


def _without(canonical: Any, step_id: str) -> Any:
    return canonical.model_copy(
        update={
            "step_statuses": {k: v for k, v in canonical.step_statuses.items() if k != step_id},
            "steps": {k: v for k, v in canonical.steps.items() if k != step_id},
        }
    )


@pytest.mark.parametrize("path", demo_workflows(), ids=lambda p: p.stem)
@pytest.mark.parametrize("engine_class", [KahnEngine, LangGraphEngine], ids=["kahn", "langgraph"])
def test_reordering_declarations_or_adding_a_noop_changes_nothing(
    path: Path, engine_class: type
) -> None:
    text = path.read_text(encoding="utf-8")
    variants = {
        "original": load_workflow_text(text, source=path.name),
        "reversed": load_workflow_text(_reversed(text), source=path.name),
        "noop": load_workflow_text(_with_noop(text), source=path.name),
    }

    async def go() -> dict[str, Any]:
        store = InMemoryRunStore()
        results = {}
        for name, wf in variants.items():
            result = await engine_class().execute(wf, _context(store))
            results[name] = canonical_of(wf, store, result.run_id)
        return results

    runs = asyncio.run(go())
    assert compare(runs["original"], runs["reversed"]) == []
    assert runs["noop"].step_statuses["zz_noop"] == "SUCCEEDED"
    assert compare(runs["original"], _without(runs["noop"], "zz_noop")) == []


@settings(max_examples=max(EXAMPLES // 6, 20))
@given(dag_cases(max_size=6))
def test_random_dags_are_invariant_under_reordering(case: DagCase) -> None:
    order = list(reversed(range(case.size)))

    async def go() -> tuple[Any, Any]:
        store = InMemoryRunStore()
        first = case.workflow()
        second = case.workflow(order=order, extra_steps=[{"id": "zz_noop", "uses": "demo.echo"}])
        _, a = await run_case(LangGraphEngine(), first, store)
        _, b = await run_case(LangGraphEngine(), second, store)
        return a, _without(b, "zz_noop")

    a, b = asyncio.run(go())
    assert compare(a, b) == []


def _context(store: InMemoryRunStore) -> Any:
    from engine.protocol import RunContext

    return RunContext(store=store, responder=approve)
