"""The Textual application: screens, the command palette, F1 help, theme and keymap.

The app holds no domain logic: it composes a :class:`~tui.launch.workbench.Workbench`
(what the rest of the product offers) with screens that render run events.
Each live run's engine loop runs in a Textual thread worker of its run screen, bridged by a
:class:`~tui.launch.run_driver.RunDriver`; the app stops every driver when it closes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.filter import LineFilter
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Input, OptionList, TextArea
from textual.worker import Worker, WorkerState

from tui.app.live_runs import LiveRuns
from tui.app.log_toasts import ToastHandler
from tui.app.messages import OpenRun, StartFork, StartRun
from tui.app.screens.home import HomeScreen
from tui.app.status_colours import status_variables
from tui.app.status_style import STATUS_CSS
from tui.app.terminal_guard import UnsafeCharacterFilter
from tui.launch.run_driver import NewRunJob, PromptTicket, RunDriver, RunJob
from tui.launch.workbench import Workbench
from tui.present.untrusted import for_display

if TYPE_CHECKING:  # the run screen (graph layout, the event fold) loads with the first run
    from tui.app.screens.run import RunScreen

STOP_TIMEOUT_S = 3.0
CORPUS_CHECK = "corpus-check"
"""The worker group of the start-up check for collections indexed by an older version."""


class WorkbenchCommands(Provider):
    """Palette commands: new run, open / resume run, toggle views, switch theme.

    The list (workflow files loaded, runs read from the store) is built once per
    palette opening, not again on every keystroke.
    """

    _listed: list[tuple[str, str, Any]]

    async def startup(self) -> None:
        self._listed = self._commands()

    def _commands(self) -> list[tuple[str, str, Any]]:
        app = self.app
        assert isinstance(app, WorkbenchApp)
        commands: list[tuple[str, str, Any]] = []
        for entry in for_display(app.workbench.workflows()):
            if entry.definition is not None:
                commands.append(
                    (
                        f"Run workflow: {entry.name}",
                        "open the new-run form for it",
                        partial(app.choose_workflow, entry.name),
                    )
                )
        for run in for_display(app.workbench.store().list_runs(30)):
            commands.append(
                (
                    f"Open run: {run.run_id} {run.workflow} {run.status.value}",
                    "replay it event by event",
                    partial(app.open_run, run.run_id),
                )
            )
            if run.status.value in ("WAITING", "RUNNING"):
                commands.append(
                    (
                        f"Resume run: {run.run_id} {run.workflow}",
                        "continue it from where it stopped",
                        partial(app.open_run, run.run_id, True),
                    )
                )
        for theme in sorted(app.available_themes):
            commands.append((f"Switch theme: {theme}", "", partial(setattr, app, "theme", theme)))
        for view, action in (
            ("outline view", "toggle_outline"),
            ("providers panel", "toggle_panel('providers')"),
            ("rounds matrix", "toggle_panel('rounds')"),
            ("event log", "toggle_panel('log')"),
        ):
            commands.append(
                (f"Toggle {view}", "on the run screen", partial(app.run_screen_action, action))
            )
        commands.append(("Run history", "every stored run", app.show_history))
        return commands

    async def discover(self) -> Hits:
        for title, help_text, callback in self._listed:
            if title.startswith(("Run workflow", "Toggle", "Run history")):
                yield Hit(1.0, title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._listed:
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class WorkbenchApp(App[None]):
    TITLE = "Research Workbench"
    CSS_PATH = "app.tcss"
    CSS = STATUS_CSS
    COMMANDS = App.COMMANDS | {WorkbenchCommands}
    BINDINGS = [
        # priority: help opens over every screen, prompts included (their modal chain leaves
        # the app's ordinary keys out); ? is left to a field being typed in (check_action)
        Binding("f1", "toggle_help", "Help", id="app.help", priority=True),
        Binding("question_mark", "help_key", "Help", id="app.help_key", priority=True),
        Binding("ctrl+p", "command_palette", "Palette", id="app.palette", show=False),
        Binding("ctrl+y", "history", "History", id="app.history"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    ]

    def __init__(
        self, workbench: Workbench, *, run_job: RunJob | None = None, open_run_id: str | None = None
    ) -> None:
        super().__init__()
        self.workbench = workbench
        self._initial_job = run_job
        self._initial_run = open_run_id
        self.run_drivers: list[RunDriver] = []
        self.live_runs = LiveRuns(self)
        self.live_screens: dict[str, RunScreen] = {}
        """The screen following each run this app drives, kept (installed) while the person is
        elsewhere, so its prompts wait there and reopening the run shows them."""
        self._toasts = ToastHandler(self)
        self.corpus_notices: list[str] | None = None
        """What the start-up check of the workspace corpus said (None: not finished)."""
        self._unsafe_characters = UnsafeCharacterFilter()

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then the one that removes what a terminal would act on from every
        rendered line (tui/app/terminal_guard.py), whatever widget holds it."""
        return [*super().get_line_filters(), self._unsafe_characters]

    def on_mount(self) -> None:
        self._toasts.install()
        config = self.workbench.config
        if config.theme in self.available_themes:
            self.theme = config.theme
        else:
            self.notify(
                f"theme {config.theme!r} is unknown; using {self.theme}. "
                f"Themes: {', '.join(sorted(self.available_themes))}",
                severity="warning",
                timeout=10,
            )
        if config.keymap:
            self.set_keymap(config.keymap)
        if self.workbench.config_error:
            self.notify(
                self.workbench.config_error,
                title="config not loaded, using defaults",
                severity="error",
                timeout=30,
            )
        self.push_screen(HomeScreen(self.workbench, self.live_runs))
        self.call_after_refresh(self._check_corpus)
        if self._initial_job is not None:
            self.start_job(self._initial_job)
        elif self._initial_run is not None:
            self.open_run(self._initial_run)

    @work(thread=True, group=CORPUS_CHECK, exit_on_error=False)
    def _check_corpus(self) -> list[str]:
        return self.workbench.corpus_notices()

    @on(Worker.StateChanged)
    def _corpus_checked(self, event: Worker.StateChanged) -> None:
        """A collection indexed by an older version is said once, as the command line says it
        (its passages are the old ones until ``workbench corpus add`` reads them again)."""
        if event.worker.group != CORPUS_CHECK:
            return
        if event.state is WorkerState.SUCCESS:
            self.corpus_notices = list(event.worker.result or [])
            for notice in self.corpus_notices:
                self.notify(notice, title="corpus out of date", severity="warning", timeout=30)
        elif event.state is WorkerState.ERROR:
            problem = f"the corpus was not checked: {event.worker.error}".splitlines()[0]
            self.corpus_notices = [problem]
            self.notify(problem, severity="warning", timeout=30)

    def on_unmount(self) -> None:
        self._toasts.remove()
        for driver in self.run_drivers:
            driver.stop(STOP_TIMEOUT_S)
        self.workbench.close()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notification (a widget's, a screen's, a logged warning's) shown cleaned and as
        plain text: its message may carry a server's or a file's words, control characters and
        markup (``[/]`` would stop the app, ``[link=…]`` make a link) alike."""
        super().notify(
            for_display(message),
            title=for_display(title),
            severity=severity,
            timeout=timeout,
            markup=markup,
        )

    def get_css_variables(self) -> dict[str, str]:
        """The theme's variables and the status colours made from them (status_colours.py)."""
        variables = super().get_css_variables()
        variables.update(status_variables(variables))
        self.theme_variables = variables
        return variables

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help for the focused widget", "F1", self.action_toggle_help)

    # -- runs -----------------------------------------------------------------
    def start_run(self, path: Path, inputs: dict[str, Any]) -> RunScreen:
        return self.start_job(self.workbench.new_run_job(path, inputs))

    def _new_run_driver(self, job: RunJob, screen: RunScreen) -> RunDriver:
        from tui.app.screens.run import PromptArrived

        def on_prompt(ticket: PromptTicket) -> None:
            screen.post_message(PromptArrived(ticket))

        driver = RunDriver(job, on_prompt)
        self.run_drivers.append(driver)
        return driver

    def start_job(self, job: RunJob) -> RunScreen:
        from tui.app.screens.run import RunScreen

        screen = RunScreen(
            self.workbench,
            self.live_runs,
            run_id=job.run_id if isinstance(job, NewRunJob) else "",
        )
        screen.driver = self._new_run_driver(job, screen)
        self.follow(screen)
        self.push_screen(screen)
        return screen

    def follow(self, screen: RunScreen) -> None:
        """Keep ``screen`` while its run is live here: leaving it does not lose its prompts."""
        if screen.run_id and screen.run_id not in self.live_screens:
            self.live_screens[screen.run_id] = screen
            self.install_screen(screen, f"run {screen.run_id}")

    def run_ended(self, screen: RunScreen) -> None:
        """``screen``'s run is no longer driven here: the screen goes once the person has left it
        (it says so again when it is left)."""
        if self.live_screens.get(screen.run_id) is screen:
            del self.live_screens[screen.run_id]
        if self.is_screen_installed(screen) and screen not in self.screen_stack:
            self.uninstall_screen(screen)
            screen.remove()

    def _show_live(self, screen: RunScreen) -> None:
        """Bring a live run's screen to the top (what was above it closes) and open its next
        prompt, so a prompt left for later is in front of the person who came back for it."""
        if screen in self.screen_stack:
            while self.screen is not screen:
                self.screen.dismiss(None)
        else:
            self.push_screen(screen)
        screen.call_after_refresh(screen.action_answer_next)

    def open_run(self, run_id: str, resume: bool = False) -> RunScreen | None:
        from tui.app.screens.run import RunScreen

        live = self.live_screens.get(run_id)
        if live is not None:
            self._show_live(live)
            return live
        store = self.workbench.store()
        try:
            record = store.get_run(run_id)
        except LookupError:
            self.notify(f"no run {run_id!r} in {self.workbench.runs_location}", severity="error")
            return None
        screen = RunScreen(
            self.workbench,
            self.live_runs,
            run_id=run_id,
            stored_events=store.events(run_id),
            stored_status=record.status.value,
        )
        self.push_screen(screen)
        if resume or self.workbench.follows(record):
            screen.call_after_refresh(screen.action_resume)
        return screen

    def resume_run(self, screen: RunScreen) -> None:
        refusal = self.workbench.resume_refusal(screen.run_id)
        if refusal:
            self.notify(refusal, severity="error")
            return
        shown = max((event.seq for event in screen.events), default=0)
        driver = self._new_run_driver(self.workbench.resume_job(screen.run_id, shown), screen)
        screen.go_live(driver)
        self.follow(screen)

    def choose_workflow(self, name: str) -> None:
        while len(self.screen_stack) > 2:
            self.pop_screen()
        home = self.screen
        if isinstance(home, HomeScreen):
            for index, entry in enumerate(home.entries):
                if entry.name == name:
                    home.query_one("#workflows", OptionList).highlighted = index
                    home.choose(entry)
                    home.action_focus_form()

    def run_screen_action(self, action: str) -> None:
        from tui.app.screens.run import RunScreen

        if isinstance(self.screen, RunScreen):
            self.call_later(self.run_action, action, self.screen)
        else:
            self.notify("open a run first", severity="warning")

    def show_history(self) -> None:
        from tui.app.screens.history import HistoryScreen

        self.push_screen(HistoryScreen(self.workbench, self.live_runs))

    @on(StartRun)
    def _start_run_asked(self, message: StartRun) -> None:
        self.start_run(message.path, message.inputs)

    @on(StartFork)
    def _fork_asked(self, message: StartFork) -> None:
        self.start_job(self.workbench.fork_job(message.plan))

    @on(OpenRun)
    def _open_run_asked(self, message: OpenRun) -> None:
        self.open_run(message.run_id)

    def on_run_screen_resume_run(self, message: RunScreen.ResumeRun) -> None:
        """Named, not ``@on``: the run screen's module loads with the first run."""
        self.resume_run(message.screen)

    def on_run_screen_run_id_known(self, message: RunScreen.RunIdKnown) -> None:
        self.follow(message.screen)

    def on_run_screen_run_ended(self, message: RunScreen.RunEnded) -> None:
        self.run_ended(message.screen)

    # -- help -----------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``?`` is a character while a text field has the focus (F1 still opens help)."""
        if action == "help_key":
            return not isinstance(self.focused, (Input, TextArea))
        return True

    def action_help_key(self) -> None:
        self.action_toggle_help()

    def action_history(self) -> None:
        from tui.app.screens.history import HistoryScreen

        if isinstance(self.screen, HistoryScreen):
            self.notify("this is the run history; Escape goes back")
            return
        self.show_history()

    def action_toggle_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()
