"""Home: the workflows (shipped and the user's), recent runs, and a new-run form.

The workflows are loaded by a thread worker after the first frame (loading one means
importing the steps it may use and compiling its conditions), with a loading line shown
meanwhile; the list fills in when the worker succeeds (``Worker.StateChanged``).

The form is built from the chosen workflow's declared inputs; values are
converted by the engine's rule for run inputs (as ``--input`` values are) and a
bad one is named on one line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from engine.run_inputs import InputError, resolve_inputs
from engine.spec import InputSpec, WorkflowDefinition
from engine.store import RunInputs, RunSummary
from tui.app.live_runs import LiveRuns
from tui.app.messages import OpenRun, StartRun
from tui.app.status_style import STATUS_CLASSES, StatusStyler, on_theme_change, status_style
from tui.app.widgets.key_footer import KeyFooter, KeyRanking
from tui.present.untrusted import for_display

if TYPE_CHECKING:
    from tui.launch.workbench import Workbench, WorkflowEntry

RECENT_RUNS = 15
SHORT_HEIGHT = 32
"""Below this many rows the form drops the blank lines between its fields."""
LOADING = "loading workflows…"
LOADERS = "workflows"
"""The worker group loading Home's workflow list."""
QUESTION_WIDTH = 60
"""Characters of a run's question shown in the recent-runs table; the rest is elided."""


def form_inputs(definition: WorkflowDefinition, texts: Mapping[str, str]) -> dict[str, Any]:
    """The run's inputs from the form's texts, converted by the engine's one rule — the one
    ``workbench run --input KEY=VALUE`` uses, so the form accepts what the command line does.

    An empty field takes the declared default; an empty required one is named. Raises
    :class:`engine.run_inputs.InputError` with one line for the person.
    """
    given = {name: text.strip() for name, text in texts.items() if text.strip()}
    for name, spec in definition.inputs.items():
        if spec.required and spec.default is None and name not in given:
            raise InputError(f"{name} is required")
    return resolve_inputs(definition, given)


def input_field(name: str, spec: InputSpec) -> Input | Select[str]:
    """A form field for one declared input: a list to choose from when the input declares its
    values (``choices``), else a text box showing its default (blank: the hint says what)."""
    if spec.choices:
        options = [(str(choice), str(choice)) for choice in spec.choices]
        return Select(
            options,
            value=Select.NULL if spec.default is None else str(spec.default),
            allow_blank=spec.default is None,
            prompt="choose one" if spec.required else "(none: the default)",
            name=name,
            classes="form-input",
            compact=True,
        )
    default = (
        ""
        if spec.default is None
        else (json.dumps(spec.default) if spec.type in ("list", "dict") else str(spec.default))
    )
    hint = f"a {spec.type}" + (", empty: the default" if not spec.required else "")
    return Input(value=default, placeholder=hint, name=name, classes="form-input")


def field_text(field: Input | Select[str]) -> str:
    """A field's value as the text ``--input NAME=VALUE`` would give ('' for none chosen)."""
    if isinstance(field, Select):
        return "" if field.value is Select.NULL else str(field.value)
    return field.value


RUN_COLUMNS = ("run", "status", "workflow", "when", "question", "engine")
"""The runs tables' columns: what tells runs apart first, so a narrow terminal cuts the rest."""


def run_cells(run: RunSummary, status: Text, question: str, now: float) -> tuple[object, ...]:
    """A run's row in the runs tables (Home's recent runs, the history), in RUN_COLUMNS order."""
    return (
        run.run_id,
        status,
        run.workflow,
        age(now - run.created_ts),
        escape(question),  # text from outside: shown as written, never read as markup
        run.engine,
    )


def age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def full_question(run: RunInputs) -> str:
    """What a run was asked: its first text input, declared ones first ('' when it took none)."""
    for name in [*run.declared_inputs, *run.inputs]:
        value = run.inputs.get(name)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return ""


def run_question(run: RunInputs) -> str:
    """The run's question cut to the recent-runs column."""
    text = full_question(run)
    return text if len(text) <= QUESTION_WIDTH else text[: QUESTION_WIDTH - 1] + "…"


def status_text(run: RunSummary, style: StatusStyler, shown: str) -> Text:
    """A run's status for the runs tables: ``shown`` (:meth:`LiveRuns.shown_status`); a RUNNING
    run whose process is gone says so."""
    label = run.status_label(hint=False) if shown == run.status.value else shown
    if label != shown:
        return Text(label, style=style("STALE"))
    return Text(shown, style=style(shown))


class HomeScreen(KeyRanking, Screen[None]):
    CSS_PATH = "home.tcss"
    HELP = """
## Home

Pick a workflow on the left (**Enter** or **Tab** goes to its form), fill in
its inputs and press **^S** (or **Ctrl+Enter** where the terminal sends it) from
any field to start the run; **Enter** in the last field starts it too. An input
with a fixed set of values is a list to choose from. Recent runs are below:
**Enter** opens one (replay, report, answer its prompts); **^Y** lists every run.
"""
    BINDINGS = [
        # priority: it starts the run from any field of the form (a text box keeps other keys)
        Binding("ctrl+s,ctrl+enter", "start", "Start run", id="home.start", priority=True),
        Binding("ctrl+n", "focus_form", "New run", id="home.new_run"),
        Binding("f5", "refresh", "Refresh", id="home.refresh"),
    ]
    KEY_ORDER = ("home.start", "home.new_run", "app.history", "home.refresh")

    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, workbench: Workbench, live_runs: LiveRuns) -> None:
        super().__init__()
        self.workbench = workbench
        self.live_runs = live_runs
        self.entries: list[WorkflowEntry] = []
        self.chosen: WorkflowEntry | None = None
        self.fields: dict[str, Input | Select[str]] = {}
        """The chosen workflow's input fields, by input name (no ids: forms are rebuilt while old ones unmount)."""

    def compose(self) -> ComposeResult:
        yield Static(
            Text.assemble(
                (" Research Workbench ", "bold reverse"),
                ("  bounded, auditable agentic research", "dim"),
            ),
            id="home-title",
        )
        with Horizontal(id="home-top"):
            with Vertical(id="workflows-box"):
                yield Label("Workflows", classes="box-title")
                yield OptionList(id="workflows")
            with Vertical(id="form-box"):
                yield Label("New run", classes="box-title", id="form-title")
                # not focusable itself: the first Tab from the workflows lands in the first field
                yield VerticalScroll(id="form", can_focus=False)
                yield Static("", id="form-error")
                yield Button(
                    "Start run (^S)", id="start", variant="primary", disabled=True, compact=True
                )
        with Vertical(id="runs-box"):
            yield Label("Recent runs", classes="box-title")
            yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < SHORT_HEIGHT, "-short")

    def on_mount(self) -> None:
        self.set_class(self.app.size.height < SHORT_HEIGHT, "-short")
        self.query_one("#runs", DataTable).add_columns(*RUN_COLUMNS)
        self.action_refresh()
        self.query_one("#workflows", OptionList).focus()
        on_theme_change(self, self.refresh_runs)
        self.live_runs.changed.subscribe(self, lambda _run_id: self.refresh_runs())

    @property
    def ready(self) -> bool:
        """The workflows are listed and the first usable one's form is on screen."""
        return self.chosen is not None and all(f.is_mounted for f in self.fields.values())

    def on_screen_resume(self) -> None:
        self.refresh_runs()

    def action_refresh(self) -> None:
        """Reload the workflow list (in a worker) and the recent runs."""
        options = self.query_one("#workflows", OptionList)
        options.clear_options()
        options.add_option(Option(Text(LOADING, style="dim italic"), disabled=True))
        # Started once this frame is painted: the worker imports the steps' modules, and a thread
        # importing while the frame is drawn takes the interpreter lock the drawing needs.
        self.call_after_refresh(self._load_workflows)
        self.refresh_runs()

    @work(thread=True, exclusive=True, group=LOADERS, exit_on_error=False)
    def _load_workflows(self) -> list[WorkflowEntry]:
        return for_display(self.workbench.workflows())

    @on(Worker.StateChanged)
    def _workflows_loaded(self, event: Worker.StateChanged) -> None:
        if event.worker.group != LOADERS:
            return
        if event.state is WorkerState.SUCCESS and event.worker.result is not None:
            self.show_workflows(event.worker.result)
        elif event.state is WorkerState.ERROR:
            options = self.query_one("#workflows", OptionList)
            options.clear_options()
            problem = f"workflows not loaded: {event.worker.error}".splitlines()[0]
            options.add_option(Option(Content.styled(problem, "$status-critical"), disabled=True))

    def show_workflows(self, entries: list[WorkflowEntry]) -> None:
        self.entries = entries
        options = self.query_one("#workflows", OptionList)
        options.clear_options()
        for index, entry in enumerate(self.entries):
            label = Content.assemble(
                (entry.name, "bold" if entry.origin == "shipped" else ""),
                (f"  {entry.origin}", "dim"),
                (f"\n  {entry.error}" if entry.error else "", "$status-critical"),
            )
            options.add_option(Option(label, id=str(index), disabled=bool(entry.error)))
        usable = [i for i, e in enumerate(self.entries) if not e.error]
        if usable:
            options.highlighted = usable[0]
            self.choose(self.entries[usable[0]])

    def refresh_runs(self) -> None:
        table = self.query_one("#runs", DataTable)
        cursor = table.cursor_coordinate
        table.clear()
        now = self.workbench.clock()
        store = self.workbench.store()
        for run in for_display(store.list_runs_with_inputs(RECENT_RUNS)):
            shown = self.live_runs.shown_status(run, store)
            status = status_text(run, partial(status_style, self), shown)
            table.add_row(*run_cells(run, status, run_question(run), now), key=run.run_id)
        table.cursor_coordinate = cursor

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            self.choose(self.entries[int(event.option.id)])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.action_focus_form()

    def choose(self, entry: WorkflowEntry) -> None:
        if entry is self.chosen or entry.definition is None:
            return
        self.chosen = entry
        definition = entry.definition
        self.query_one("#form-title", Label).update(f"New run · {definition.name}")
        form = self.query_one("#form", VerticalScroll)
        form.remove_children()
        fields: list[Any] = []
        self.fields = {}
        if definition.description:
            fields.append(
                Static(Text(definition.description, style="italic"), classes="form-description")
            )
        for name, spec in definition.inputs.items():
            mark = " *" if spec.required and spec.default is None else ""
            hint = spec.description or spec.type
            fields.append(Label(f"{name}{mark}  ({hint})", classes="form-label", markup=False))
            field = input_field(name, spec)
            self.fields[name] = field
            fields.append(field)
        if not definition.inputs:
            fields.append(Static("this workflow takes no inputs", classes="form-description"))
        form.mount_all(fields)
        self.query_one("#start", Button).disabled = False
        self.query_one("#form-error", Static).update("")

    def action_focus_form(self) -> None:
        first = next(iter(self.fields.values()), None)
        (first or self.query_one("#start")).focus()

    def form_values(self) -> dict[str, Any]:
        assert self.chosen is not None and self.chosen.definition is not None
        texts = {name: field_text(field) for name, field in self.fields.items()}
        return form_inputs(self.chosen.definition, texts)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        inputs: list[Widget] = list(self.fields.values())
        if event.input in inputs and event.input is inputs[-1]:
            self.start()
        elif event.input in inputs:
            inputs[inputs.index(event.input) + 1].focus()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """A form field that takes the focus scrolls into view with its label above it."""
        widget = event.widget
        if widget in self.fields.values():
            form = self.query_one("#form", VerticalScroll)
            form.scroll_to_widget(widget, animate=False, top=False)
            index = form.children.index(widget)
            if index:
                form.scroll_to_widget(form.children[index - 1], animate=False)
                form.scroll_to_widget(widget, animate=False)

    def action_start(self) -> None:
        if self.chosen is None:
            self.notify("the workflows are still loading", severity="warning")
            return
        self.start()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.start()

    def start(self) -> None:
        if self.chosen is None:
            return
        try:
            values = self.form_values()
        except InputError as exc:
            self.query_one("#form-error", Static).update(
                Content.styled(str(exc), "$status-critical bold")
            )
            return
        self.query_one("#form-error", Static).update("")
        self.post_message(StartRun(self.chosen.path, values))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.post_message(OpenRun(event.row_key.value))
