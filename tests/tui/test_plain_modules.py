"""The plain modules under the widgets: layout, the event fold, form conversion, the log filter."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from engine.events import ProviderState
from engine.run_inputs import InputError, resolve_inputs
from engine.spec import InputSpec, StepSpec, WorkflowDefinition
from engine.states import StepStatus
from tests.tools.sample_run import research_events, research_graph, snapshot
from tui.app.run_state import LogLine, RunView, describe
from tui.app.screens.home import form_inputs
from tui.app.widgets.dag_layout import compute_layout
from tui.app.widgets.event_log import matches
from tui.app.widgets.providers_panel import providers_table
from tui.present.breaker_story import format_cooldown


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str, str]]]:
    size = draw(st.integers(1, 25))
    nodes = [f"n{i}" for i in range(size)]
    pairs = draw(
        st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1)), max_size=60)
    )
    return nodes, [(nodes[a], nodes[b], "depends_on") for a, b in pairs if a < b]


@settings(max_examples=60)
@given(dags())
def test_layout_places_every_node_once_without_overlap_and_joins_adjacent_layers(graph) -> None:
    nodes, edges = graph
    layout = compute_layout(nodes, edges)
    assert sorted(n.id for n in layout.real_nodes) == sorted(nodes)
    for layer in layout.layers:
        xs = sorted(n.x for n in layer)
        assert all(b - a >= 1.0 for a, b in zip(xs, xs[1:]))
    for source, target, _ in edges:
        assert layout.positions[source].layer < layout.positions[target].layer
    for segment in layout.segments:
        assert 0 <= segment.layer < len(layout.layers) - 1


def test_layout_is_a_function_of_the_graph_alone() -> None:
    nodes, edges = research_graph()
    ids = [n.id for n in nodes]
    pairs = [(e.source, e.target, e.kind) for e in edges]
    groups = {n.id: n.group for n in nodes}
    first, second = compute_layout(ids, pairs, groups), compute_layout(ids, pairs, groups)
    assert {k: (v.layer, v.x) for k, v in first.positions.items()} == {
        k: (v.layer, v.x) for k, v in second.positions.items()
    }
    assert first.group_layers["research_round:2"][0] > first.group_layers["research_round:1"][1]


def test_loop_back_edges_are_kept_out_of_the_layering() -> None:
    layout = compute_layout(
        ["a", "b", "c"], [("a", "b", "depends_on"), ("b", "c", "route"), ("c", "a", "loop")]
    )
    assert [n.id for layer in layout.layers for n in layer] == ["a", "b", "c"]
    assert layout.back_edges == [("c", "a", "loop")]
    assert nx.is_directed_acyclic_graph(nx.DiGraph([(s.source, s.target) for s in layout.segments]))


def test_fold_of_a_research_run() -> None:
    view = RunView()
    parts = view.apply_all(research_events("r"))
    assert {"graph", "steps", "providers", "rounds", "log", "prompts", "status"} <= parts
    assert view.status == "COMPLETED" and not view.pending
    assert [r for r in sorted(view.rounds)] == [1, 2, 3]
    assert view.rounds[3].gate_passed and view.selected_round == 3
    assert view.providers["openai"]["state"] == "OPEN"
    assert all(
        view.steps[f"{s}_r4"].status is StepStatus.SKIPPED for s in ("supervisor", "cove_verify")
    )
    assert ("supervisor_r3", "final_synthesis") in view.chosen_edges
    assert len(view.log) == len(research_events("r"))


def test_a_pending_approval_holds_its_step_only() -> None:
    view = RunView()
    view.apply_all(research_events("r", approval_pending=True))
    assert list(view.pending) == ["r:intake_scope:0:0"]
    assert view.steps["intake_scope"].status is StepStatus.WAITING_HUMAN
    assert view.steps["source_policy"].status is StepStatus.PENDING


def form_of(spec: InputSpec) -> WorkflowDefinition:
    """A workflow with one input ``x`` declared as ``spec``."""
    return WorkflowDefinition(
        name="form", inputs={"x": spec}, steps=[StepSpec(id="a", uses="demo.echo")]
    )


@pytest.mark.parametrize(
    ("spec", "raw", "expected"),
    [
        (InputSpec(type="int", default=4), "", 4),
        (InputSpec(type="int"), "7", 7),
        (InputSpec(type="bool"), "yes", True),
        (InputSpec(type="date"), "2024-05-01", "2024-05-01"),
        (InputSpec(type="list"), '["a"]', ["a"]),
        (InputSpec(type="string"), " q ", "q"),
        # what `workbench run --input` accepts, the form accepts (it used to refuse these)
        (InputSpec(type="bool"), "on", True),
    ],
)
def test_form_values_follow_the_declared_type(spec: InputSpec, raw: str, expected: object) -> None:
    assert form_inputs(form_of(spec), {"x": raw}) == {"x": expected}
    assert form_inputs(form_of(spec), {"x": raw}) == resolve_inputs(
        form_of(spec), {"x": raw.strip()} if raw.strip() else {}
    )


@pytest.mark.parametrize(
    ("spec", "raw", "words"),
    [
        (InputSpec(type="int"), "four", "'x' must be a whole number, got 'four'"),
        (InputSpec(type="string", required=True), "", "x is required"),
        (InputSpec(type="string", choices=["a", "b"]), "c", "must be one of"),
    ],
)
def test_bad_form_values_are_named(spec: InputSpec, raw: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        form_inputs(form_of(spec), {"x": raw})


def test_log_filter_terms() -> None:
    line = LogLine(
        seq=3, kind="step_failed", level="error", text="review failed: boom", step_id="review"
    )
    assert matches(line, "kind:step_f level:error")
    assert matches(line, "boom step:rev")
    assert not matches(line, "kind:step_started")
    assert not matches(line, "boom level:info")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.4, "0.4s"),
        (3.44, "3.4s"),
        (9.94, "9.9s"),
        (9.96, "10s"),
        (10.0, "10s"),
        (28.0, "28s"),
        (600.0, "600s"),
    ],
)
def test_cooldowns_keep_a_decimal_under_ten_seconds(seconds: float, shown: str) -> None:
    assert format_cooldown(seconds) == shown


def test_a_short_cooldown_counts_down_in_tenths_in_the_panel_and_the_log() -> None:
    event = ProviderState(
        run_id="r", provider="openai", snapshot=snapshot("openai", "OPEN", cooldown_remaining_s=5.0)
    )
    assert describe(event) == "provider openai: OPEN, cooldown 5.0s"
    view = RunView()
    view.apply_all([event])
    seen = view.provider_seen_at["openai"]
    console = Console(width=120)
    with console.capture() as capture:
        console.print(providers_table(view, now=seen + 1.6))
    assert "3.4s" in capture.get()
