"""Layouts that fit (issue 14, item 3) and the history search and provider drill-down (item 4),
on the real app through Pilot: keys one at a time, each waiting for its effect."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from textual.widgets import DataTable, Input, Static

from engine.events import Domain
from engine.graph import WorkflowGraph
from engine.states import RunStatus
from engine.store import RunStore
from tests.tools.sample_run import ROUND_STEPS, research_events, round_payload, store_events
from tests.tui.pilot_wait import press, until
from tui.app.app import WorkbenchApp
from tui.app.screens.history import HistoryScreen
from tui.app.screens.provider_detail import ProviderDetailScreen
from tui.app.screens.run import RunScreen
from tui.app.widgets.dag_layout import compute_layout
from tui.app.widgets.dag_view import ZOOM_WIDTHS, DagView
from tui.app.widgets.providers_panel import ProvidersPanel
from tui.app.widgets.rounds_matrix import COMPACT_LEGEND, RoundsMatrix
from tui.launch.steps import load_workflow_file
from tui.launch.workbench import Workbench
from tui.launch.workspace import Workspace

pytestmark = pytest.mark.timeout(120)
SIZE = (150, 46)
DEEP_RESEARCH = Path(__file__).resolve().parents[2] / "workflows" / "deep_research.yaml"


def text_of(widget: Static, width: int) -> str:
    """What a Static-like widget shows, as plain text at ``width`` columns."""
    console = Console(width=width, record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()


def dag_text(dag: DagView) -> str:
    """The graph's rows as they are on screen (the scroll window only)."""
    return "\n".join(dag.render_line(y).text for y in range(dag.size.height))


async def open_run(pilot, app: WorkbenchApp, run_id: str) -> RunScreen:
    await pilot.pause()
    screen = app.open_run(run_id)
    assert isinstance(screen, RunScreen)
    await until(
        pilot,
        lambda: app.screen is screen and any(dag.size.height > 0 for dag in screen.query(DagView)),
    )
    return screen


# -- the layout, plain -------------------------------------------------------------------------


def deep_research_layout(node_width: int, workspace: Path):
    definition = load_workflow_file(DEEP_RESEARCH, Workspace(workspace))
    nodes, edges = WorkflowGraph(definition).nodes_and_edges()
    return compute_layout(
        [n.id for n in nodes],
        [(e.source, e.target, e.kind) for e in edges],
        {n.id: n.group for n in nodes},
        node_width=node_width,
    )


@pytest.mark.parametrize("node_width", ZOOM_WIDTHS)
def test_rounds_of_the_shipped_research_workflow_stay_in_their_columns(
    node_width: int, tmp_path: Path
) -> None:
    """Long edges (a round's steps wait for the previous supervisor, the synthesis for every
    supervisor) used to pull each round half a slot further right than the one before."""
    layout = deep_research_layout(node_width, tmp_path)
    x = {node.id: node.x for node in layout.real_nodes}
    for step in ROUND_STEPS:
        assert len({x[f"{step}_r{n}"] for n in range(1, 5)}) == 1, step
    assert x["final_synthesis"] == x["supervisor_r4"] == x["source_policy"]
    # lanes take two columns each: the whole graph is a few node widths wide, not one per edge
    assert layout.width <= 3 * node_width + 30


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str, str]]]:
    size = draw(st.integers(1, 25))
    nodes = [f"n{i}" for i in range(size)]
    pairs = draw(
        st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1)), max_size=60)
    )
    return nodes, [(nodes[a], nodes[b], "depends_on") for a, b in pairs if a < b]


@settings(max_examples=60, deadline=None)
@given(dags(), st.sampled_from(ZOOM_WIDTHS))
def test_no_two_nodes_of_a_layer_share_a_column(graph, node_width: int) -> None:
    nodes, edges = graph
    layout = compute_layout(nodes, edges, node_width=node_width)
    for layer in layout.layers:
        spans = sorted(
            (n.x, n.x)
            if n.dummy
            else (n.x - node_width // 2, n.x - node_width // 2 + node_width - 1)
            for n in layer
        )
        assert all(left >= 0 for left, _ in spans)
        assert all(b[0] > a[1] + 1 for a, b in zip(spans, spans[1:]))
        assert all(right < layout.width for _, right in spans)


# -- the DAG in the app ------------------------------------------------------------------------


async def test_at_250x70_the_whole_research_graph_and_a_longer_log_fit(
    workbench: Workbench,
) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(250, 70)) as pilot:
        screen = await open_run(pilot, app, "run-done")
        dag = screen.query_one(DagView)
        await until(pilot, lambda: dag.max_scroll_y == 0 and dag.max_scroll_x == 0)
        shown = dag_text(dag)
        for step in ("intake_scope", "supervisor_r4", "final_synthesis", "rag_package"):
            assert step in shown
        assert screen.query_one("#log-lines").size.height > 5


async def test_fit_zoom_and_pan_from_the_keyboard(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, app, "run-done")
        dag = screen.query_one(DagView)
        await until(pilot, lambda: app.focused is dag)
        shown = {b.binding.id for b in screen.active_bindings.values() if b.binding.show}
        assert {"dag.fit", "dag.pan_left", "dag.zoom_in"} <= shown
        fitted = dag.zoom
        assert dag.fit and dag.max_scroll_x == 0  # the fitted graph is as wide as the panel at most
        await press(pilot, "shift+down", lambda: dag.scroll_y > 0)
        await press(pilot, "shift+up", lambda: dag.scroll_y == 0)
        await press(pilot, "plus", lambda: dag.zoom == fitted + 1)
        assert not dag.fit
        await until(pilot, lambda: dag.max_scroll_x > 0)
        await press(pilot, "shift+right", lambda: dag.scroll_x > 0)
        await press(pilot, "shift+left", lambda: dag.scroll_x == 0)
        await press(pilot, "shift+right", lambda: dag.scroll_x > 0)
        await press(pilot, "f", lambda: dag.fit and dag.zoom == fitted)
        assert dag.scroll_x == dag.scroll_y == 0


# -- rounds ------------------------------------------------------------------------------------


def scored(run_id: str, rounds: range) -> list[Domain]:
    return [
        Domain(
            run_id=run_id,
            name="research.round_scored",
            payload=round_payload(n, ("High",) * 5, 0.9, "continue"),
        )
        for n in rounds
    ]


@pytest.fixture
def many_rounds(workbench: Workbench) -> Workbench:
    """A four-round run, and one whose rounds went on to R7."""
    store = RunStore(workbench.runs_db)
    four = research_events("run-four", upto_round=4, finished=False)
    store_events(store, "run-four", four, status=RunStatus.RUNNING)
    seven = research_events("run-seven", upto_round=4, finished=False)
    store_events(
        store, "run-seven", seven + scored("run-seven", range(5, 8)), status=RunStatus.RUNNING
    )
    store.close()
    return workbench


def matrix_lines(rounds: RoundsMatrix) -> list[str]:
    return text_of(rounds, rounds.content_size.width).splitlines()


@pytest.mark.parametrize(
    ("run_id", "last", "compact"), [("run-four", 4, False), ("run-seven", 7, True)]
)
async def test_every_round_fits_a_180_column_screen(
    many_rounds: Workbench, run_id: str, last: int, compact: bool
) -> None:
    """Four rounds in the full form; more than the full form has room for in the compact one."""
    app = WorkbenchApp(many_rounds)
    async with app.run_test(size=(180, 50)) as pilot:
        screen = await open_run(pilot, app, run_id)
        rounds = screen.query_one(RoundsMatrix)
        await until(pilot, lambda: rounds.display and f"R{last}" in "".join(matrix_lines(rounds)))
        lines = matrix_lines(rounds)
        assert lines[0].split()[1:] == [f"R{n}" for n in range(1, last + 1)]
        ci = next(line for line in lines if line.startswith("CI")).split()
        assert len(ci) == 1 + last  # a value under every round, the last one included
        assert (COMPACT_LEGEND in "\n".join(lines)) is compact
        if not compact:
            assert "0.95" in ci and "Medium 0.62" in next(
                line for line in lines if line.startswith("recency")
            )


# -- history -----------------------------------------------------------------------------------


async def type_text(pilot, box: Input, text: str) -> None:
    for char in text:
        before = box.value
        await press(pilot, "space" if char == " " else char, lambda b=before: box.value != b)


def rows_of(table: DataTable) -> set[str]:
    return {str(key.value) for key in table.rows}


async def test_history_search_by_status_workflow_and_question(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await press(pilot, "ctrl+y", lambda: isinstance(app.screen, HistoryScreen))
        history = app.screen
        table = history.query_one(DataTable)
        box = history.query_one("#history-search", Input)
        everything = {"run-done", "run-mid", "run-ask", "run-tie"}
        await until(pilot, lambda: rows_of(table) == everything)
        await press(pilot, "slash", lambda: app.focused is box)
        await type_text(pilot, box, "status:wait")
        await until(pilot, lambda: rows_of(table) == {"run-ask", "run-tie"})
        await type_text(pilot, box, " asyncio")
        await until(pilot, lambda: rows_of(table) == {"run-ask"})
        box.value = ""
        await until(pilot, lambda: rows_of(table) == everything)
        await type_text(pilot, box, "workflow:deep status:comp")
        await until(pilot, lambda: rows_of(table) == {"run-done"})
        title = history.query_one("#history-title", Static)
        assert "1 of 4 runs" in str(title.render())
        await press(pilot, "enter", lambda: app.focused is table)
        await press(pilot, "enter", lambda: isinstance(app.screen, RunScreen))
        assert app.screen.run_id == "run-done"


async def test_history_search_for_words_no_run_has(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await press(pilot, "ctrl+y", lambda: isinstance(app.screen, HistoryScreen))
        table = app.screen.query_one(DataTable)
        box = app.screen.query_one("#history-search", Input)
        await press(pilot, "slash", lambda: app.focused is box)
        await type_text(pilot, box, "garbage")
        await until(pilot, lambda: table.row_count == 0)
        await press(pilot, "down", lambda: app.focused is table)


# -- provider drill-down -----------------------------------------------------------------------


async def test_provider_drill_down_says_why_it_tripped(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, app, "run-mid")
        panel = screen.query_one(ProvidersPanel)
        panel.focus()
        await until(pilot, lambda: app.focused is panel)
        assert panel.selected == "anthropic"
        await press(pilot, "down", lambda: panel.selected == "local")
        await press(pilot, "down", lambda: panel.selected == "openai")
        await press(pilot, "down", lambda: True)
        assert panel.selected == "openai"  # the last row stays chosen
        await press(pilot, "enter", lambda: isinstance(app.screen, ProviderDetailScreen))
        detail = app.screen
        facts = text_of(detail.query_one("#provider-facts"), 100)
        assert "OPEN" in facts
        assert "tripped by rate_limit, HTTP 429; trip 2 in a row" in facts
        assert "28s of 30s" in facts
        assert "tier 1: gpt-4o-mini, tier 2: gpt-4o" in facts
        assert "$0.0123" in facts
        assert "17 · ok 7 · failed 10" in facts
        await press(pilot, "escape", lambda: app.screen is screen)
        await press(pilot, "up", lambda: panel.selected == "local")
        await press(pilot, "enter", lambda: isinstance(app.screen, ProviderDetailScreen))
        facts = text_of(app.screen.query_one("#provider-facts"), 100)
        assert "serving (breaker CLOSED)" in facts
        assert re.search(r"^last error +none *$", facts, re.M)
