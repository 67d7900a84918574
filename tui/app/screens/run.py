"""The run screen: DAG, providers, rounds matrix, event log, prompts — live or replayed.

A live run's engine loop is hosted by a Textual thread worker this screen starts; a run
that fails outside the engine's own bookkeeping (its file gone, a broken config) ends that
worker in the ERROR state, reported here through ``Worker.StateChanged``. Its events arrive
in the driver's inbox and are drained here on a 20 Hz timer; each batch is folded into the :class:`RunView` and only the parts
it changed are redrawn. A stored run is read from the run store and replayed
through the same fold, at any event along its timeline. Prompts are answered
here: a live prompt resolves its ticket's future; a stored one (a run left
WAITING, possibly by an earlier session) is recorded in the store and the run
is resumed with it.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import ContentSwitcher, Static
from textual.worker import Worker, WorkerState

from engine.context import InterruptAnswer
from engine.events import InterruptRaised, RunEvent
from engine.protocol import ExecutionResult
from engine.store import InterruptClosed
from tui.app.live_runs import LiveRuns
from tui.app.model_calls import model_calls
from tui.app.run_header import HeaderStyles, starting_line, status_line
from tui.app.run_state import (
    Part,
    ReplayFold,
    RunView,
    changes,
    describe,
)
from tui.app.screens.run_fork import ForkFromTheScreen
from tui.app.screens.run_layout import PanelSizes
from tui.app.status_style import STATUS_CLASSES, on_theme_change, status_style, tone_style
from tui.app.widgets.dag_outline import DagOutline
from tui.app.widgets.dag_view import DagView
from tui.app.widgets.event_log import EventLog
from tui.app.widgets.key_footer import KeyFooter, KeyRanking
from tui.app.widgets.prompts import PromptQueue, prompt_for
from tui.app.widgets.providers_panel import ProvidersPanel
from tui.app.widgets.rounds_matrix import RoundsMatrix
from tui.app.widgets.timeline import Timeline
from tui.launch.run_driver import PromptTicket, RunDriver
from tui.present.untrusted import for_display

if TYPE_CHECKING:
    from tui.launch.workbench import Workbench

RUN_WORKERS = "run"
"""The worker group of the thread workers hosting live runs."""
DRAIN_INTERVAL_S = 0.05
DRAIN_LIMIT = 400
"""Events folded per tick at most: 8,000/s at 20 Hz, and a bounded amount of work per frame."""
NARROW_WIDTH = 100
SHORT_HEIGHT = 32
"""Below this many rows (or NARROW_WIDTH columns) the side panels and the log share one slot under
the graph, chosen with 1/2/3, so every panel stays reachable on an 80×24 terminal."""
PANELS = ("providers", "rounds", "log")
STARTING_TICK_S = 0.5


class PromptArrived(Message):
    """A live interrupt: the ticket's future is what the waiting step awaits."""

    def __init__(self, ticket: PromptTicket) -> None:
        self.ticket = ticket
        super().__init__()


class _AboutScreen(Message):
    """What a run screen asks of the app about itself (the app handles each by name)."""

    def __init__(self, screen: RunScreen) -> None:
        super().__init__()
        self.screen = screen


class RunScreen(ForkFromTheScreen, PanelSizes, KeyRanking, Screen[None]):
    CSS_PATH = "run.tcss"

    class ResumeRun(_AboutScreen):
        """Continue the stored run shown on ``screen`` and follow it there (the app does)."""

    class RunIdKnown(_AboutScreen):
        """The live run on ``screen`` has said its id (its first event): the app keeps the
        screen while the run is live."""

    class RunEnded(_AboutScreen):
        """The run on ``screen`` is no longer driven here."""

    HELP = """
## Run

The workflow graph, provider health, the rounds matrix and the event log of
one run. **Enter** on a step opens its detail; **p** answers the next prompt;
**d** compares a research round with the one before (once two are scored);
**i** copies the run id (OSC 52).
"""

    COMPONENT_CLASSES = set(STATUS_CLASSES)
    BINDINGS = [
        Binding("escape", "back", "Back", id="run.back"),
        Binding("p", "answer_next", "Answer prompt", id="run.answer"),
        Binding("r", "report", "Report", id="run.report"),
        Binding("slash", "filter_log", "Filter log", id="run.filter_log"),
        Binding("t", "fork", "Fork here", id="run.fork"),
        Binding("comma", "replay(-1)", "◀ event", id="run.replay_back"),
        Binding("full_stop", "replay(1)", "event ▶", id="run.replay_forward"),
        Binding("d", "round_diff", "Round diff", id="run.round_diff"),
        Binding("u", "resume", "Resume", id="run.resume"),
        Binding("o", "toggle_outline", "Outline", id="run.toggle_outline"),
        # on a small terminal the panel keys are the only way to the panels: the footer ranks
        # them high there (see KEY_ORDER and key_acts)
        Binding("1", "toggle_panel('providers')", "Providers", id="run.toggle_providers"),
        Binding("2", "toggle_panel('rounds')", "Rounds", id="run.toggle_rounds"),
        Binding("3", "toggle_panel('log')", "Log", id="run.toggle_log"),
        Binding("i", "copy_run_id", "Copy id", id="run.copy_run_id", show=False),
    ]
    KEY_ORDER = (
        "run.answer",
        "run.resume",
        "dag.open",
        "run.report",
        "run.fork",
        "run.replay_back",
        "run.replay_forward",
        "run.filter_log",
        "run.round_diff",
        "run.toggle_providers",
        "run.toggle_rounds",
        "run.toggle_log",
        "run.back",
    )

    def __init__(
        self,
        workbench: Workbench,
        live_runs: LiveRuns,
        *,
        run_id: str = "",
        driver: RunDriver | None = None,
        stored_events: list[RunEvent] | None = None,
        position: int | None = None,
        stored_status: str = "",
    ) -> None:
        super().__init__()
        self.workbench = workbench
        self.live_runs = live_runs
        self.run_id = run_id
        self.driver = driver
        self.worker: Worker[ExecutionResult] | None = None
        """The thread worker hosting (or that hosted) the live run's engine loop."""
        self.failure: BaseException | None = None
        """Why the live run's worker failed, when it did."""
        self.view = RunView(run_id=run_id)
        self.events: list[RunEvent] = for_display(list(stored_events or []))
        self.position = (
            len(self.events) if position is None else max(0, min(position, len(self.events)))
        )
        self.stored_status = stored_status
        self._replay = ReplayFold(self.events, run_id)
        """Checkpoints of the stored run's fold, so a step back does not refold from event 0."""
        """The store's word on a stored run (WAITING when it paused with nobody there)."""
        self.tickets: dict[str, PromptTicket] = {}
        self._prompt_open = False
        self._outline = False
        self._hidden_panels: set[str] = set()
        """Panels the person hid with 1/2/3."""
        self._compact_panel = "log"
        """On a small terminal, the one panel shown under the graph (1/2/3 choose it)."""
        self._mounted_at = 0.0
        self._starting_timer: Timer | None = None
        self._counts_shown: tuple[str, int, int] | None = None
        """The indexing counts the starting line shows."""
        self._rounds_shown: bool | None = None
        """Whether the rounds panel was offered at the last redraw."""
        self._keys_offered: tuple[bool, ...] = ()
        """Which of the keys that come and go the footer listed at the last redraw."""

    @property
    def live(self) -> bool:
        return self.driver is not None

    # -- layout ------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="run-status")
        yield PromptQueue(id="prompt-queue")
        with Horizontal(id="run-main"):
            with ContentSwitcher(initial="dag", id="graph"):
                yield DagView(id="dag")
                yield DagOutline(id="outline")
            with Vertical(id="side"):
                yield ProvidersPanel(self.workbench.clock, id="providers")
                yield RoundsMatrix(id="rounds")
        yield EventLog(id="log")
        yield Timeline(id="timeline")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._mounted_at = self.workbench.clock()
        on_theme_change(self, self._show_status)
        self.query_one(ProvidersPanel).live = self.live
        self.query_one(Timeline).display = not self.live
        for panel_id, title in (
            ("graph", "Workflow"),
            ("providers", "Providers"),
            ("rounds", "Rounds"),
            ("log", "Events"),
        ):
            self.query_one(f"#{panel_id}").border_title = title
        if not self.live:
            self._fold_stored(self.position)
        self._redraw(None)
        self.set_interval(DRAIN_INTERVAL_S, self.drain)
        self.set_interval(1.0, self.query_one(ProvidersPanel).tick)
        if self.live and self.view.status == "PENDING":
            self._starting_timer = self.set_interval(STARTING_TICK_S, self._show_starting)

        self.query_one(DagView).focus()
        self._apply_size(self.app.size.width, self.app.size.height)
        if self.view.pending and not self.live:
            self.call_after_refresh(self.action_answer_next)
        if self.driver is not None:
            self._host(self.driver)

    def _host(self, driver: RunDriver) -> None:
        """Run ``driver``'s engine loop in a thread worker of this screen."""
        self.worker = self.run_worker(
            driver.run,
            name=f"run {self.run_id}".strip(),
            group=RUN_WORKERS,
            thread=True,
            exit_on_error=False,
        )

    def on_screen_suspend(self) -> None:
        if not self.live:
            self.post_message(self.RunEnded(self))

    def on_resize(self, event: events.Resize) -> None:
        self._apply_size(event.size.width, event.size.height)

    def _apply_size(self, width: int, height: int) -> None:
        narrow = width < NARROW_WIDTH
        compact = narrow or height < SHORT_HEIGHT
        if compact != self.has_class("-compact"):
            self.refresh_bindings()  # the footer ranks the panel keys higher on a small terminal
        self.set_class(narrow, "-narrow")
        self.set_class(compact, "-compact")
        self._show_graph(outline=self._outline or narrow)
        self._place_panels()
        self._share_width(width)
        self._share_height(height)

    def _show_graph(self, outline: bool) -> None:
        switcher = self.query_one("#graph", ContentSwitcher)
        wanted = "outline" if outline else "dag"
        if switcher.current != wanted:
            had_focus = self.focused in (self.query_one(DagView), self.query_one(DagOutline))
            switcher.current = wanted
            if had_focus:
                self.query_one(f"#{wanted}").focus()

    # -- events in ----------------------------------------------------------------
    def drain(self) -> None:
        """Fold whatever the worker produced since the last tick; redraw what changed."""
        if self.driver is None:
            return
        batch = for_display(self.driver.inbox.drain(DRAIN_LIMIT))
        counts = self.driver.inbox.waiting_on()
        if self.view.status == "PENDING" and counts != self._counts_shown:
            self._counts_shown = counts
            self._show_status()
        if batch:
            self.events.extend(batch)
            self.position = len(self.events)
            if not self.run_id:
                self.run_id = batch[0].run_id
                self.post_message(self.RunIdKnown(self))
            self._redraw(self.view.apply_all(batch))
        finished = self.worker is not None and self.worker.is_finished
        if finished and not len(self.driver.inbox):
            self._driver_done()

    def _driver_done(self) -> None:
        """The run is over here: the screen replays it from now on (its timeline shows)."""
        self.driver = None
        self.position = len(self.events)
        self._replay = ReplayFold(self.events, self.run_id)
        self.query_one(ProvidersPanel).live = False
        self.query_one(Timeline).display = True
        self._redraw({"status"})
        self.live_runs.ended(self.run_id, self.view.status)
        self.post_message(self.RunEnded(self))

    @on(Worker.StateChanged)
    def _run_worker_changed(self, event: Worker.StateChanged) -> None:
        """A live run whose job raised: say why (its events already stored stay shown)."""
        if event.worker.group != RUN_WORKERS or event.state is not WorkerState.ERROR:
            return
        self.failure = event.worker.error
        self.notify(f"the run stopped: {self.failure}", severity="error", timeout=10)
        self._redraw({"status"})

    def _redraw(self, parts: set[Part] | None, steps: set[str] | None = None) -> None:
        """Redraw ``parts`` of the view (None: all of it); ``steps``: the steps whose drawing
        changed (None: those the view noted while folding)."""
        every = parts is None
        parts = parts or set()
        view = self.view
        changed_steps = view.take_changed_steps() if steps is None else steps
        if every or parts & {"graph", "steps"}:
            self.query_one(DagView).show(view, None if every or "graph" in parts else changed_steps)
            self.query_one(DagOutline).show(view, None if every else changed_steps)
            if every or "graph" in parts:
                self._share_width(self.app.size.width)
        if every or "providers" in parts:
            self.query_one(ProvidersPanel).show(view)
        if every or "rounds" in parts:
            self.query_one(RoundsMatrix).show(view)
            self._offer_rounds()
        if every or "log" in parts:
            self.query_one(EventLog).show(view)
        if every or parts & {"prompts", "steps"}:
            self.query_one(PromptQueue).show(self.pending_prompts())
        if every or parts & {"graph", "providers", "rounds", "prompts"}:
            self._share_height(self.app.size.height)  # the prompt line shown or gone too
        if every or "status" in parts:
            self._show_status()
        if every or parts & {"status", "prompts", "rounds"}:
            self._offer_keys()
        if not self.live:
            timeline = self.query_one(Timeline)
            timeline.total, timeline.position = len(self.events), self.position
            timeline.caption = (
                describe(self.events[self.position - 1])
                if self.position
                else "before the first event"
            )

    def _offer_rounds(self) -> None:
        """Show the rounds panel once there are rounds."""
        shown = bool(self.view.rounds)
        if shown != self._rounds_shown:
            self._rounds_shown = shown
            self._place_panels()

    def _show_starting(self) -> None:
        """Count the seconds until the run's first event, so its start is never a blank wait."""
        if (self.view.status != "PENDING" or not self.live) and self._starting_timer is not None:
            self._starting_timer.stop()
            self._starting_timer = None
        self._show_status()

    def _show_status(self) -> None:
        v = self.view
        if self.live:
            self.live_runs.report(self.run_id, v.status)
        styles = HeaderStyles(partial(status_style, self), partial(tone_style, self))
        if v.status == "PENDING" and self.live:
            waited = max(0.0, self.workbench.clock() - self._mounted_at)
            counts = self.driver.inbox.waiting_on() if self.driver is not None else None
            line = starting_line(waited, counts, styles)
        else:
            line = status_line(
                v,
                styles,
                run_id=self.run_id,
                replay=(self.position, len(self.events)) if self.replaying else None,
                live=self.live,
                failure=self.failure,
            )
        self.query_one("#run-status", Static).update(line, layout=False)

    # -- replay ------------------------------------------------------------------
    def seek(self, position: int) -> None:
        """Show the run as it stood after ``position`` stored events, redrawing what changed:
        forward, the events in between are folded into the view shown; back, the view is
        refolded from the nearest checkpoint and compared with the one shown."""
        if self.live:
            return
        position = max(0, min(position, len(self.events)))
        before = self.view
        if position > self.position:
            parts = self.view.apply_all(self.events[self.position : position])
            steps = self.view.take_changed_steps()
            self.position = position
            if self._take_stored_status():
                parts.add("status")
        else:
            self._fold_stored(position)
            self.view.take_changed_steps()
            parts, steps = changes(before, self.view)
        self._redraw(parts | {"status"}, steps)

    def _fold_stored(self, position: int) -> None:
        self.view = self._replay.view_at(position)
        self.position = position
        self._take_stored_status()

    def _take_stored_status(self) -> bool:
        """At a stored run's last event, its status is the store's (WAITING when it paused with
        nobody there) unless its events settled it or say it waits; whether that changed the
        view."""
        if (
            self.position == len(self.events)
            and self.stored_status
            and self.view.status not in ("COMPLETED", "FAILED", "PARTIAL", "CANCELLED", "WAITING")
            and self.view.status != self.stored_status
        ):
            self.view.status = self.stored_status
            return True
        return False

    def on_timeline_seek(self, message: Timeline.Seek) -> None:
        self.seek(message.position)

    def action_replay(self, delta: int) -> None:
        if not self._refused("replay"):
            self.seek(self.position + delta)

    # -- prompts -----------------------------------------------------------------
    def pending_prompts(self) -> list[InterruptRaised]:
        events = {e.interrupt_id: e for e in self.view.prompts_in_order()}
        for interrupt_id, ticket in self.tickets.items():
            events.setdefault(interrupt_id, for_display(ticket.event))
        return sorted(events.values(), key=lambda e: (e.seq == 0, e.seq))

    def on_prompt_arrived(self, message: PromptArrived) -> None:
        self.tickets[message.ticket.event.interrupt_id] = message.ticket
        self.query_one(PromptQueue).show(self.pending_prompts())
        if not self._prompt_open and self.is_current:
            self.action_answer_next()

    def action_answer_next(self) -> None:
        if self._prompt_open:
            return
        if self._refused("answer_next"):
            return
        pending = self.pending_prompts()
        event = pending[0]
        graph_targets = [
            e.target
            for e in self.view.edges
            if e.source == event.step_id and e.kind != "depends_on"
        ]
        self._prompt_open = True

        def answered(answer: InterruptAnswer | None) -> None:
            self._prompt_open = False
            if answer is not None:
                self.answer(event, answer)
                if len(self.pending_prompts()) > 0:
                    self.call_after_refresh(self.action_answer_next)

        self.app.push_screen(prompt_for(event, graph_targets, queued=len(pending) - 1), answered)

    def answer(self, event: InterruptRaised, answer: InterruptAnswer) -> None:
        ticket = self.tickets.pop(event.interrupt_id, None)
        if ticket is not None:
            ticket.resolve(answer)
        elif self.driver is None or not self.driver.answer(event.interrupt_id, answer):
            self._answer_stored(event, answer)
        self.view.pending.pop(event.interrupt_id, None)
        self.query_one(PromptQueue).show(self.pending_prompts())

    def _answer_stored(self, event: InterruptRaised, answer: InterruptAnswer) -> None:
        """A prompt of a run nobody is running: store the answer, resume when none is left."""
        store = self.workbench.store()
        try:
            store.record_answer(event.interrupt_id, answer)
        except LookupError:
            self.notify(
                f"interrupt {event.interrupt_id} is not in the run store; it cannot be answered",
                severity="error",
            )
            return
        except ConnectionError as error:  # a server's runs, the server unreachable
            self.notify(f"{error} — the answer was not sent; open the run again", severity="error")
            return
        except InterruptClosed as error:  # answered elsewhere first
            self.notify(str(error), severity="warning")
            return
        if not any(e.interrupt_id != event.interrupt_id for e in self.view.prompts_in_order()):
            self.action_resume()

    def action_resume(self) -> None:
        if not self.run_id or self._refused("resume"):
            return
        self.post_message(self.ResumeRun(self))

    def go_live(self, driver: RunDriver) -> None:
        """Switch a stored screen to follow its resumed run."""
        self.seek(len(self.events))
        self.driver = driver
        self.query_one(Timeline).display = False
        self.query_one(ProvidersPanel).live = True
        self._host(driver)

    # -- navigation ----------------------------------------------------------------
    def on_dag_view_node_selected(self, message: DagView.NodeSelected) -> None:
        from tui.app.screens.step_detail import StepDetailScreen

        step = self.view.steps.get(message.step_id)
        if step is None:
            return
        run_id = self.run_id or self.view.run_id
        calls = for_display(model_calls(self.workbench.store(), run_id, step.id, step.iteration))
        live = self.workbench.live if self.live else None
        self.app.push_screen(
            StepDetailScreen(
                step,
                run_id=run_id,
                calls=calls,
                live=live,
                upstream=self.view.upstream_outputs(step.id),
            )
        )

    def on_providers_panel_chosen(self, message: ProvidersPanel.Chosen) -> None:
        from tui.app.screens.provider_detail import ProviderDetailScreen

        panel = self.query_one(ProvidersPanel)
        self.app.push_screen(
            ProviderDetailScreen(
                message.provider, lambda: panel.snapshot(message.provider), live=panel.live
            )
        )

    def action_toggle_outline(self) -> None:
        self._outline = not self._outline
        self._show_graph(self._outline or self.has_class("-narrow"))

    def action_toggle_panel(self, panel: str) -> None:
        """Hide or show ``panel``; on a small terminal, put it in the one slot under the graph."""
        if self.has_class("-compact"):
            self._compact_panel = panel
            self._hidden_panels.discard(panel)
        else:
            self._hidden_panels ^= {panel}
        self._place_panels()

    def action_filter_log(self) -> None:
        self._hidden_panels.discard("log")
        self._compact_panel = "log"
        self._place_panels()
        self.query_one("#log-filter").focus()

    def _place_panels(self) -> None:
        """Show each panel unless hidden (on a small terminal: the chosen one only); the rounds
        panel only once the run has rounds."""
        available = [p for p in PANELS if p != "rounds" or self.view.rounds]
        compact = self.has_class("-compact")
        chosen = self._compact_panel if self._compact_panel in available else "log"
        for panel in PANELS:
            self.query_one(f"#{panel}").display = (
                panel in available
                and panel not in self._hidden_panels
                and (not compact or panel == chosen)
            )
        side = self.query_one("#side")
        side.display = self.query_one("#providers").display or self.query_one("#rounds").display
        self._share_height(self.app.size.height)

    def action_report(self) -> None:
        from tui.app.screens.report import ReportScreen

        if self._refused("report"):
            return

        self.app.push_screen(
            ReportScreen(self.workbench, self.run_id or self.view.run_id, self.view)
        )

    def action_copy_run_id(self) -> None:
        run_id = self.run_id or self.view.run_id
        if run_id:
            self.app.copy_to_clipboard(run_id)
            self.notify(f"run id {run_id} copied (OSC 52)")

    def key_order(self) -> tuple[str, ...]:
        """On a small terminal the panel keys come right after a waiting prompt's: they are
        the only way to the panels there."""
        if not self.has_class("-compact"):
            return self.KEY_ORDER
        panels = ("run.toggle_providers", "run.toggle_rounds", "run.toggle_log")
        rest = tuple(key for key in self.KEY_ORDER if key not in panels)
        return (*rest[:2], *panels, *rest[2:])

    @property
    def replaying(self) -> bool:
        """A stored run shown before its last event."""
        return not self.live and self.position < len(self.events)

    def key_acts(self, action: str) -> bool:
        """Whether a run-screen key can act now; the footer lists only those that can (the
        others say why in a toast, :meth:`why_not`)."""
        return self.why_not(action) is None

    def why_not(self, action: str) -> str | None:
        """Why the key bound to ``action`` cannot act now; None when it can."""
        run_id = self.run_id or self.view.run_id
        if action == "answer_next":
            if self.replaying and self.pending_prompts():
                return (
                    f"replaying event {self.position} of {len(self.events)}: prompts are "
                    "answered at the run's last event (End on the timeline)"
                )
            if not self.pending_prompts():
                return "no prompt is waiting for an answer"
        elif action == "resume":
            if self.live:
                return f"run {run_id} is running here already"
            if self.view.status not in ("WAITING", "RUNNING"):
                return f"run {run_id} is {self.view.status}; only a WAITING or stopped run resumes"
        elif action.startswith("replay"):
            if self.live:
                return "the run is live: its replay opens once it has finished"
        elif action == "fork":
            return self._fork_refusal()
        elif action == "round_diff" and len(self.view.rounds) < 2:
            return (
                f"the round diff compares two scored rounds; this run has {len(self.view.rounds)}"
            )
        elif action == "report" and not run_id:
            return "the run has not started yet"
        return None

    def _refused(self, action: str) -> bool:
        """Say why ``action`` cannot act now (a toast); whether it cannot."""
        reason = self.why_not(action)
        if reason is not None:
            self.notify(reason, severity="warning")
        return reason is not None

    def _offer_keys(self) -> None:
        """Rebuild the footer when the keys that act change (a rebuild costs a layout)."""
        offered = tuple(
            self.key_acts(a) for a in ("answer_next", "resume", "replay", "fork", "round_diff")
        )
        if offered != self._keys_offered:
            self._keys_offered = offered
            self.refresh_bindings()

    def action_round_diff(self) -> None:
        from tui.app.screens.round_diff import RoundDiffScreen

        if self._refused("round_diff"):
            return

        self.app.push_screen(RoundDiffScreen(self.view))

    def action_back(self) -> None:
        self.app.pop_screen()
