"""The workflow graph: forward edges, back edges, and the queries the engines ask."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.graph import WorkflowGraph
from engine.spec import StepSpec, WorkflowDefinition


def workflow(*steps: dict) -> WorkflowDefinition:
    return WorkflowDefinition(name="g", steps=[StepSpec(uses="demo.any", **s) for s in steps])


@pytest.fixture
def microloop() -> WorkflowGraph:
    """intake → author → critic ⟲ author; critic → publish (next) or → gather (detour, returns)."""
    return WorkflowGraph(
        workflow(
            {"id": "intake"},
            {"id": "author", "depends_on": ["intake"]},
            {"id": "side", "depends_on": ["intake"]},
            {
                "id": "critic",
                "depends_on": ["author", "side"],
                "routing": {
                    "kind": "loop",
                    "next": "publish",
                    "loop": {"target": "author", "max_iterations": 3},
                    "detour": {"target": "gather"},
                },
            },
            {"id": "gather"},
            {"id": "publish"},
        )
    )


def test_forward_edges_come_from_depends_on_and_routing_targets(microloop):
    assert microloop.dependencies("critic") == ["author", "side"]
    assert microloop.dependencies("publish") == ["critic"]
    assert microloop.dependencies("gather") == ["critic"]
    assert microloop.routers_of("publish") == ["critic"]
    assert microloop.routers_of("critic") == []
    assert microloop.dependents("critic") == ["gather", "publish"]
    assert microloop.edge_kinds("critic", "gather") == {"detour"}


def test_loop_and_detour_return_are_back_edges_that_order_nothing(microloop):
    assert [(e.source, e.target) for e in microloop.loop_edges] == [("critic", "author")]
    assert [(e.source, e.target) for e in microloop.detour_edges] == [("gather", "critic")]
    assert microloop.has_cycles
    assert "critic" not in microloop.dependencies("author")
    assert microloop.forward_cycles() == []
    assert microloop.topological_order() == [
        "intake",
        "author",
        "side",
        "critic",
        "gather",
        "publish",
    ]


def test_ancestors_descendants_and_between(microloop):
    assert microloop.ancestors("critic") == {"intake", "author", "side"}
    assert microloop.descendants("author") == {"critic", "gather", "publish"}
    assert microloop.between("author", "critic") == ["author", "critic"]
    assert microloop.between("intake", "critic") == ["intake", "author", "side", "critic"]
    assert microloop.between("critic", "critic") == ["critic"]
    with pytest.raises(ValueError, match="not upstream"):
        microloop.between("publish", "author")


def test_visibility_counts_back_edge_ancestry(microloop):
    assert microloop.visible_from("author") >= {"intake", "critic", "side", "author", "gather"}
    assert "publish" not in microloop.visible_from("author")
    assert microloop.visible_from("critic") >= {"gather", "author", "critic"}
    assert microloop.visible_from("side") == {"intake"}
    assert microloop.detour_declarer("gather") == "critic"
    assert microloop.detour_declarer("publish") is None


def test_acyclic_workflows_have_no_cycles_and_ties_follow_declaration_order():
    graph = WorkflowGraph(workflow({"id": "z"}, {"id": "a"}, {"id": "m", "depends_on": ["z", "a"]}))
    assert not graph.has_cycles
    assert graph.topological_order() == ["z", "a", "m"]


def test_forward_cycles_are_found_with_their_edge_kinds():
    graph = WorkflowGraph(
        workflow(
            {"id": "a", "depends_on": ["c"]},
            {"id": "b", "depends_on": ["a"]},
            {"id": "c", "depends_on": ["b"], "routing": {"next": "d"}},
            {"id": "d", "routing": {"next": "d"}},
        )
    )
    cycles = graph.forward_cycles()
    assert [sorted(s for s, _, _ in cycle) for cycle in cycles] == [["a", "b", "c"], ["d"]]
    assert cycles[1] == [("d", "d", frozenset({"route"}))]


def test_critical_path_is_the_longest_weighted_chain(microloop):
    length, path = microloop.critical_path(
        {"intake": 1, "author": 2, "side": 5, "critic": 1, "publish": 3}
    )
    assert length == 10
    assert path == ["intake", "side", "critic", "publish"]
    assert WorkflowGraph(workflow({"id": "only"})).critical_path({}) == (0.0, ["only"])


def test_nodes_and_edges_for_the_run_started_event(microloop):
    nodes, edges = microloop.nodes_and_edges()
    assert [n.id for n in nodes] == ["intake", "author", "side", "critic", "gather", "publish"]
    assert {(e.source, e.target, e.kind) for e in edges} == {
        ("intake", "author", "depends_on"),
        ("intake", "side", "depends_on"),
        ("author", "critic", "depends_on"),
        ("side", "critic", "depends_on"),
        ("critic", "gather", "detour"),
        ("critic", "publish", "route"),
        ("critic", "author", "loop"),
    }


def test_run_started_lists_edges_in_workflow_order_and_marks_steps_that_ask() -> None:
    """Edges by their source's place in the file, then their target's — not by name, not by
    target — and a step with an interrupt is marked as one."""
    nodes, edges = WorkflowGraph(
        workflow(
            {"id": "z"},
            {"id": "y", "interrupt": {"before": True}},
            {"id": "x", "depends_on": ["y"]},
            {"id": "w", "depends_on": ["z"]},
        )
    ).nodes_and_edges()
    assert [(e.source, e.target) for e in edges] == [("z", "w"), ("y", "x")]
    assert [n.has_interrupt for n in nodes] == [False, True, False, False]


@given(st.lists(st.lists(st.integers(0, 30), max_size=4), min_size=1, max_size=30))
@settings(max_examples=40)
def test_topological_order_respects_every_dependency_of_random_dags(parents):
    steps = [
        {"id": f"s{i}", "depends_on": sorted({f"s{p % i}" for p in ps}) if i else []}
        for i, ps in enumerate(parents)
    ]
    graph = WorkflowGraph(workflow(*steps))
    order = {step: index for index, step in enumerate(graph.topological_order())}
    assert len(order) == len(steps)
    for step in steps:
        for dependency in step["depends_on"]:
            assert order[dependency] < order[step["id"]]
            assert dependency in graph.ancestors(step["id"])


@given(
    st.lists(st.lists(st.integers(0, 30), max_size=4), min_size=2, max_size=30),
    st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=4),
)
@settings(max_examples=60, deadline=None)
def test_constant_time_reachability_agrees_with_ancestor_sets(parents, loops):
    """is_upstream and can_read (bit sets over components) answer exactly what the
    ancestor sets and visible_from answer, on random DAGs with random loops."""
    steps = [
        {"id": f"s{i}", "depends_on": sorted({f"s{p % i}" for p in ps}) if i else []}
        for i, ps in enumerate(parents)
    ]
    graph = WorkflowGraph(workflow(*steps))
    for low, high in loops:
        low, high = sorted((low % len(steps), high % len(steps)))
        if low == high or f"s{low}" in graph.ancestors(f"s{high}"):
            steps[high]["routing"] = {
                "kind": "loop",
                "loop": {"target": f"s{low}", "max_iterations": 2},
            }
    graph = WorkflowGraph(workflow(*steps))
    ids = [step["id"] for step in steps]
    for step_id in ids:
        ancestors, visible = graph.ancestors(step_id), graph.visible_from(step_id)
        for other in ids:
            assert graph.is_upstream(step_id, other) == (other in ancestors)
            assert graph.can_read(step_id, other) == (other in visible)


def test_reachability_of_a_long_chain_needs_no_ancestor_sets():
    """The last step of a 3,000-step chain has every other step upstream; the loader's
    checks ask this of every step without building one ancestor set per step."""
    graph = WorkflowGraph(
        workflow(
            {"id": "s0"}, *({"id": f"s{i}", "depends_on": [f"s{i - 1}"]} for i in range(1, 3000))
        )
    )
    assert graph.forward_cycles() == []
    assert graph.is_upstream("s2999", "s0") and not graph.is_upstream("s0", "s2999")
    assert graph.can_read("s2999", "s1500") and not graph.can_read("s1500", "s2999")
    assert not graph.can_read("s7", "s7")
    assert graph._ancestors == {}


def test_a_definition_has_one_graph_kept_for_the_last_few_definitions_used() -> None:
    """``WorkflowGraph.of`` builds a definition's graph once; an equal but distinct
    definition gets its own, and only the last ``KEPT_GRAPHS`` definitions are kept."""
    import engine.graph as graphs

    first = workflow({"id": "a"}, {"id": "b", "depends_on": ["a"]})
    graph = WorkflowGraph.of(first)
    assert graph.workflow is first and WorkflowGraph.of(first) is graph
    twin = workflow({"id": "a"}, {"id": "b", "depends_on": ["a"]})
    assert WorkflowGraph.of(twin) is not graph and WorkflowGraph.of(twin).workflow is twin
    assert WorkflowGraph.of(first) is graph  # used again: now the least recently used is twin
    others = [workflow({"id": f"o{n}"}) for n in range(graphs.KEPT_GRAPHS - 1)]
    for other in others:
        WorkflowGraph.of(other)
    assert len(graphs._KEPT) == graphs.KEPT_GRAPHS
    assert id(twin) not in graphs._KEPT and id(first) in graphs._KEPT
    assert all(id(other) in graphs._KEPT for other in others)
    assert WorkflowGraph.of(first) is graph


def test_the_run_started_graph_is_built_once_per_graph() -> None:
    graph = WorkflowGraph(workflow({"id": "a"}, {"id": "b", "depends_on": ["a"]}))
    nodes, edges = graph.nodes_and_edges()
    assert graph.nodes_and_edges() == (nodes, edges)
    assert graph.nodes_and_edges()[0] is nodes and graph.nodes_and_edges()[1] is edges
    assert [node.id for node in nodes] == ["a", "b"]


def test_what_readiness_reads_of_a_graph_is_built_once_per_graph() -> None:
    from engine.readiness import ReadinessRules
    from engine.run_state import RunState

    wf = workflow(
        {"id": "a"}, {"id": "b", "depends_on": ["a"]}, {"id": "c", "depends_on": ["b", "a"]}
    )
    graph = WorkflowGraph(wf)
    one, two = (ReadinessRules(RunState.fresh(run, wf, {}), graph) for run in ("r1", "r2"))
    assert one.order is two.order and one.dependencies is two.dependencies
    assert one.order == {"a": 0, "b": 1, "c": 2}
    assert one.dependencies == {"a": (), "b": ("a",), "c": ("a", "b")}
    assert (one.followers("a"), one.followers("c")) == (("b", "c"), ())
    another = ReadinessRules(RunState.fresh("r3", wf, {}), WorkflowGraph(wf))
    assert another.order is not one.order and another.order == one.order


def test_a_steps_neighbours_are_listed_in_declaration_order_not_by_name() -> None:
    graph = WorkflowGraph(
        workflow(
            {"id": "z"},
            {"id": "b", "depends_on": ["z"]},
            {"id": "a", "depends_on": ["z"]},
            {"id": "m", "depends_on": ["a", "z", "b"]},
        )
    )
    assert graph.dependencies("m") == ["z", "b", "a"]
    assert graph.dependents("z") == ["b", "a", "m"]


def test_a_loaded_workflow_is_checked_selected_and_run_on_one_graph(monkeypatch) -> None:
    """The loader's graph checks, the engine's selection and the run share the graph the
    loader built: a run of a file builds its graph once, not once per reader."""
    import asyncio

    import engine.demo_steps  # noqa: F401 - registers demo.echo
    from engine.kahn import KahnEngine
    from engine.loader import load_workflow_text
    from engine.protocol import RunContext
    from engine.selector import select_engine
    from engine.states import RunStatus
    from engine.store import InMemoryRunStore

    built: list[WorkflowDefinition] = []
    build = WorkflowGraph.__init__

    def counted(graph: WorkflowGraph, wf: WorkflowDefinition) -> None:
        built.append(wf)
        build(graph, wf)

    monkeypatch.setattr(WorkflowGraph, "__init__", counted)
    wf = load_workflow_text(
        "name: two\nsteps:\n  - id: a\n    uses: demo.echo\n"
        "  - id: b\n    uses: demo.echo\n    depends_on: [a]\n"
    )
    assert select_engine(wf).name == "kahn"
    store = InMemoryRunStore()
    result = asyncio.run(KahnEngine().execute(wf, RunContext(store=store)))
    assert result.status == RunStatus.COMPLETED
    assert built == [wf]
