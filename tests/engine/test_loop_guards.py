"""The loop guards readiness builds per graph (engine/readiness.py ``_loop_guards``) equal,
per detour under way and per step, those of the plain definition below: the waits graph
searched step by step with networkx, once per detour — cubic in a workflow's size, so
readiness computes the same table another way, shared between detours. Generated
workflows (tests/engine/reference/generator.py) and chains of loops with detours."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import engine.demo_steps  # noqa: F401 - registers demo.echo
from engine.errors import WorkflowLoadError
from engine.graph import WorkflowGraph
from engine.loader import load_workflow_text
from engine.readiness import Detour, ReadinessRules, _build_tables, _reaches
from engine.spec import StepSpec, WorkflowDefinition
from tests.engine.reference import probe  # noqa: F401  (registers ref.probe, which generated steps use)
from tests.engine.reference.generator import load, workflows


def defined_guards(graph: WorkflowGraph, detour: Detour) -> dict[str, list[str]]:
    """docs/workflows.md, "When a step runs", as first written (engine-meaning, 864c4c7)."""
    order = graph.topological_order()
    reaches = _reaches(graph)
    waits = nx.DiGraph()  # an edge a -> b: b waits for a
    waits.add_nodes_from(order)
    for step in order:
        for dependency in graph.dependencies(step):
            waits.add_edge(dependency, step)
    if detour is not None:
        declarer, target = detour
        waits.add_edge(target, declarer)
    guards: dict[str, list[str]] = {}
    for step in order:
        upstream = graph.ancestors(step)
        candidates = [
            r for r, reach in reaches if step not in reach and not reach.isdisjoint(upstream)
        ]
        if not candidates:
            continue
        waiting = nx.descendants(waits, step)
        for router in candidates:
            if router not in waiting:
                waits.add_edge(router, step)
                guards.setdefault(step, []).append(router)
    return guards


def assert_same_guards(graph: WorkflowGraph) -> None:
    tables = _build_tables(graph)
    rules = ReadinessRules.__new__(ReadinessRules)
    rules._loop_guards = tables.loop_guards
    steps = [spec.id for spec in graph.workflow.steps]
    under_way = [(edge.target, edge.source) for edge in graph.detour_edges]
    defined = {detour: defined_guards(graph, detour) for detour in (None, *under_way)}
    for detour, guards in defined.items():
        for step in steps:
            assert rules._guards(detour, step) == guards.get(step, []), (detour, step)
    for detour in under_way:  # who is asked again when a detour starts or returns
        changed = {s for s in steps if defined[detour].get(s) != defined[None].get(s)}
        for end in detour:
            assert changed <= set(tables.followers[end]), (detour, end)
    for guards in defined.values():
        for step, routers in guards.items():
            for router in routers:
                assert step in tables.followers[router], (router, step)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
@given(workflows())
def test_generated_workflows_get_the_defined_loop_guards(data: dict[str, Any]) -> None:
    assert_same_guards(WorkflowGraph(load(data)))


def chain(segments: int, readers: bool = False, crossed: bool = False) -> WorkflowDefinition:
    """Segments of ten steps in a row, each a loop with a detour off its middle. With
    ``readers``, each segment also has a step reading its loop's body from outside
    (``r``, after ``s_5``) that the next segment depends on too: a step whose loop router is
    not upstream of it, so its waits are searched, once per detour (issue 26's bad case).
    With ``crossed``, the chain follows two parallel loops whose bodies are read from outside
    by steps (one per segment each way) that the other loop's body depends on: their
    possible waits form a cycle."""
    steps: list[dict[str, Any]] = _crossed_loops(segments) if crossed else []
    previous: str | None = "ab" if crossed else None
    for i in range(segments):
        for j in range(10):
            step: dict[str, Any] = {"id": f"s{i}_{j}", "uses": "demo.echo"}
            more = [f"d{i}"] if j == 7 else [f"r{i - 1}"] if j == 0 and readers and i else []
            step["depends_on"] = [previous, *more] if previous else []
            if j == 9:
                loop = {"target": f"s{i}_0", "max_iterations": 2}
                step["routing"] = {"kind": "loop", "loop": loop}
                if i + 1 < segments:
                    step["routing"]["next"] = f"s{i + 1}_0"
            elif j == 3:
                detour = {"target": f"d{i}", "when": "true"}
                step["routing"] = {"kind": "linear", "next": f"s{i}_4", "detour": detour}
            steps.append(step)
            previous = step["id"]
        steps.append({"id": f"d{i}", "uses": "demo.echo", "depends_on": [f"s{i}_1"]})
        if readers:
            steps.append({"id": f"r{i}", "uses": "demo.echo", "depends_on": [f"s{i}_5"]})
    return WorkflowDefinition(name="chain", steps=[StepSpec(**s) for s in steps])


def _crossed_loops(readers: int) -> list[dict[str, Any]]:
    """Loops ``a0``..``a9`` and ``b0``..``b9`` side by side, ``readers`` steps reading each body
    after its second step, those reading one loop depended on by the other's sixth; ``ab``
    after both."""
    steps: list[dict[str, Any]] = []
    for name, other in (("a", "b"), ("b", "a")):
        for j in range(10):
            needs = [f"{name}{j - 1}"] if j else []
            if j == 5:
                needs += [f"x{other}{i}" for i in range(readers)]
            step: dict[str, Any] = {"id": f"{name}{j}", "uses": "demo.echo", "depends_on": needs}
            if j == 9:
                step["routing"] = {
                    "kind": "loop",
                    "loop": {"target": f"{name}0", "max_iterations": 2},
                }
            steps.append(step)
        steps += [
            {"id": f"x{name}{i}", "uses": "demo.echo", "depends_on": [f"{name}1"]}
            for i in range(readers)
        ]
    return [*steps, {"id": "ab", "uses": "demo.echo", "depends_on": ["a9", "b9"]}]


def test_a_chain_of_loops_with_detours_gets_the_defined_loop_guards() -> None:
    assert_same_guards(WorkflowGraph(chain(6)))


def test_a_chain_of_loops_read_from_outside_gets_the_defined_loop_guards() -> None:
    assert_same_guards(WorkflowGraph(chain(6, readers=True)))


def test_loops_read_from_outside_into_each_other_get_the_defined_loop_guards() -> None:
    """The possible waits form a cycle (xa waits for b's router, b5 for xa, and so the other
    way): the steps on it share a place and the bounds hold (issue 26 review: the whole-graph
    search this replaced cost 2 minutes to load 2,620 steps)."""
    assert_same_guards(WorkflowGraph(chain(5, readers=True, crossed=True)))


@st.composite
def loops_and_detours(draw: st.DrawFn) -> dict[str, Any]:
    """Up to 14 steps, each depending on one or two earlier ones; some close a loop back to
    an earlier step, some declare a detour to a step depending on an earlier one, some both
    (a loop's router declaring a detour)."""
    size = draw(st.integers(4, 14))
    steps: list[dict[str, Any]] = []
    for index in range(size):
        step: dict[str, Any] = {"id": f"s{index}", "uses": "demo.echo"}
        if index:
            earlier = st.integers(0, index - 1).map(lambda i: f"s{i}")
            step["depends_on"] = sorted(draw(st.sets(earlier, min_size=1, max_size=2)))
        steps.append(step)
    for index in range(1, size):
        kind = draw(st.sampled_from(["none", "none", "loop", "detour", "both"]))
        routing: dict[str, Any] = {"kind": "linear"}
        if kind in ("loop", "both"):
            target = f"s{draw(st.integers(0, index - 1))}"
            routing = {"kind": "loop", "loop": {"target": target, "max_iterations": 2}}
        if kind in ("detour", "both"):
            target = f"s{draw(st.integers(0, size - 1))}"
            routing["detour"] = {"target": target, "when": "true"}
        if kind != "none":
            steps[index]["routing"] = routing
    return {"name": "drawn", "steps": steps}


def load_drawn(data: dict[str, Any]) -> WorkflowDefinition:
    try:
        return load_workflow_text(json.dumps(data), source="drawn.yaml")
    except WorkflowLoadError:
        assume(False)
        raise


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
@given(loops_and_detours())
def test_drawn_loops_and_detours_get_the_defined_loop_guards(data: dict[str, Any]) -> None:
    assert_same_guards(WorkflowGraph(load_drawn(data)))


def test_a_loop_router_declaring_a_detour_gets_the_defined_loop_guards() -> None:
    """A loop's router may declare a detour too: here to ``t``, which reads the loop's body
    and so waits for its router — but not while the detour is under way, when the router
    waits for ``t`` (the one wait a step with only upstream candidates can lose to a detour:
    issue 26's alive mutant ``_guards_in_order`` 13 took them all unsearched)."""
    steps: list[dict[str, Any]] = [
        {"id": "a", "uses": "demo.echo"},
        {
            "id": "d",
            "uses": "demo.echo",
            "depends_on": ["a"],
            "routing": {
                "kind": "loop",
                "loop": {"target": "a", "max_iterations": 2},
                "detour": {"target": "t", "when": "true"},
            },
        },
        {"id": "t", "uses": "demo.echo", "depends_on": ["d"]},
    ]
    graph = WorkflowGraph(load_drawn({"name": "router_detour", "steps": steps}))
    assert defined_guards(graph, None) == {"t": ["d"]}
    assert defined_guards(graph, ("d", "t")) == {}
    assert_same_guards(graph)
