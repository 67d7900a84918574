"""The person at the keyboard (issue 25): every size works, every key can be found, the header
and the log say what is going on. The real app through Pilot at the sizes named."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static
from textual.widgets._footer import FooterKey

from engine.events import Domain, ProviderState, RunEvent
from engine.protocol import ExecutionResult, InterruptResponder
from engine.states import RunStatus
from engine.store import RunStore
from research.events import STAGE
from tests.tools.sample_run import research_events, store_events
from tests.tui.pilot_wait import press, prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.run_state import RunView
from tui.app.screens.history import HistoryScreen
from tui.app.screens.home import HomeScreen
from tui.app.screens.report import ReportScreen
from tui.app.screens.run import RunScreen
from tui.app.widgets.event_log import LogLines
from tui.app.widgets.find_bar import FindBar
from tui.app.widgets.prompts import ApprovalPrompt, TieBreakPrompt
from tui.launch.run_driver import EventInbox
from tui.launch.workbench import SHIPPED_WORKFLOWS, Workbench

SMALL = (80, 24)


def footer_keys(app: WorkbenchApp) -> list[str]:
    """The keys the footer on screen shows, as the person reads them (key and description)."""
    return [
        f"{key.key_display} {key.description}".strip()
        for key in app.screen.query(FooterKey)
        if key.region.width
    ]


def shown(widget: Static) -> str:
    return str(widget.render())


async def opened(pilot, app: WorkbenchApp, run_id: str) -> RunScreen:
    await until(pilot, lambda: isinstance(app.screen, HomeScreen))
    screen = app.open_run(run_id)
    assert screen is not None
    await until(
        pilot, lambda: screen.is_current or isinstance(app.screen, (ApprovalPrompt, TieBreakPrompt))
    )
    await until(
        pilot, lambda: bool(screen.query("#graph")) and screen.query_one("#graph").size.width > 0
    )
    return screen


# -- the header -----------------------------------------------------------------------------


async def test_the_status_line_reverses_only_the_workflow_name(workbench: Workbench) -> None:
    """It spilled over the whole line (RUNNING grey on orange, 1.08:1 in textual-light)."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot, app, "run-done")
        content = screen.query_one("#run-status", Static).render()
        reversed_spans = [span for span in content.spans if getattr(span.style, "reverse", False)]
        assert [content.plain[s.start : s.end] for s in reversed_spans] == [" deep_research "]


async def test_the_first_frame_counts_seconds_from_the_run_screen_opening(
    workbench: Workbench,
) -> None:
    """The first frame showed the Unix time as the seconds waited (``starting 1795775438s``)."""
    release = threading.Event()

    async def slow_start(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
        import asyncio

        while not release.is_set():
            await asyncio.sleep(0.01)
        return ExecutionResult(run_id="never", status=RunStatus.CANCELLED)

    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        screen = app.start_job(slow_start)
        await until(
            pilot,
            lambda: (
                bool(screen.query("#run-status"))
                and "starting" in shown(screen.query_one("#run-status", Static))
            ),
        )
        line = shown(screen.query_one("#run-status", Static))
        release.set()
        assert " 0s" in line, line


async def test_replaying_says_so_and_a_finished_live_run_gets_its_timeline(tmp_path: Path) -> None:
    """A run watched to its end had no timeline, and ``,`` flipped the header to RUNNING."""
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none"))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        job = app.workbench.new_run_job(SHIPPED_WORKFLOWS / "fan_out.yaml", {}, engine="kahn")
        screen = app.start_job(job)
        await until(pilot, lambda: not screen.live and screen.view.status == "COMPLETED")
        assert screen.query_one("#timeline").display
        total = len(screen.events)
        await press(pilot, "comma", lambda: screen.position == total - 1)
        status = shown(screen.query_one("#run-status", Static))
        assert f"▷ REPLAY {total - 1}/{total}" in status
        assert " RUNNING" not in status.replace("was RUNNING", "")


# -- keys --------------------------------------------------------------------------------------


async def test_at_80_columns_the_footer_shows_the_keys_that_act_and_help(
    workbench: Workbench,
) -> None:
    """The footer ended at ``p Answer prompt``: Report, /, F1 only showed from 180 columns; p and
    u were offered when they could do nothing."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SMALL) as pilot:
        screen = await opened(pilot, app, "run-done")
        await until(pilot, lambda: "? Help" in footer_keys(app))
        keys = footer_keys(app)
        assert "r Report" in keys and "^p Palette" in keys
        assert not any(k.startswith(("p ", "u ")) for k in keys), keys
        await press(
            pilot,
            "p",
            lambda: any("no prompt is waiting" in str(n.message) for n in app._notifications),
        )
        await press(
            pilot,
            "u",
            lambda: any(
                "only a WAITING or stopped run resumes" in str(n.message)
                for n in app._notifications
            ),
        )
        assert app.screen is screen


async def test_a_prompt_shows_its_own_keys_not_the_run_screens(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SMALL) as pilot:
        await opened(pilot, app, "run-ask")
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        await until(pilot, lambda: "^a Approve" in footer_keys(app))
        keys = footer_keys(app)
        assert "^r Reject" in keys and "? Help" in keys
        assert "r Report" not in keys and "1 Providers" not in keys
        buttons = [str(b.label) for b in app.screen.query("Button") if b.display]
        assert "Later Esc" in buttons
        assert all(
            b.region.right <= app.size.width and b.region.height
            for b in app.screen.query("Button")
            if b.display
        )


@pytest.mark.parametrize("run_id", ["run-ask", "run-tie"])
async def test_at_80x24_a_prompt_opens_on_its_question_with_its_buttons_on_screen(
    workbench: Workbench, run_id: str
) -> None:
    """The tie-breaker opened scrolled to its bottom (question, suggestion and why off screen);
    the plan pushed Approve and Reject below the fold; a button read ``Later (Es``."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SMALL) as pilot:
        await opened(pilot, app, run_id)
        await until(pilot, lambda: isinstance(app.screen, (ApprovalPrompt, TieBreakPrompt)))
        prompt = app.screen
        parts = ("#prompt-title", "#prompt-text", "#prompt-buttons")
        await until(
            pilot,
            lambda: (
                prompt.focused is not None
                and all(prompt.query_one(part).region.height for part in parts)
            ),
        )
        screen_area = prompt.region
        for part in parts:
            region = prompt.query_one(part).region
            assert region.height and screen_area.contains_region(region), part
        for button in prompt.query("Button"):
            if button.display:
                label = str(button.label)
                assert button.region.width >= len(label), label


@pytest.mark.parametrize("where", ["home", "run", "report", "prompt", "history"])
async def test_question_mark_opens_help_on_every_screen(workbench: Workbench, where: str) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen) and app.screen.ready)
        if where == "home":
            app.screen.query_one("#workflows").focus()
        elif where == "history":
            await press(pilot, "ctrl+y", lambda: isinstance(app.screen, HistoryScreen))
            app.screen.query_one("#history").focus()
        elif where == "prompt":
            await opened(pilot, app, "run-tie")
            await until(pilot, lambda: prompt_ready(app, TieBreakPrompt))
        else:
            await opened(pilot, app, "run-done")
            if where == "report":
                await press(pilot, "r", lambda: isinstance(app.screen, ReportScreen))
        await press(pilot, "question_mark", lambda: bool(app.screen.query("HelpPanel")))


async def test_question_mark_types_in_a_text_field(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen) and app.screen.ready)
        field = next(iter(app.screen.fields.values()))
        assert isinstance(field, Input)
        field.focus()
        await until(pilot, lambda: app.focused is field)
        await press(pilot, "question_mark", lambda: field.value.endswith("?"))
        assert not app.screen.query("HelpPanel")


async def test_ctrl_y_opens_the_history_from_a_run(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot, app, "run-done")
        await press(pilot, "ctrl+y", lambda: isinstance(app.screen, HistoryScreen))


async def test_the_report_search_line_shows_what_is_typed_and_the_count(
    workbench: Workbench,
) -> None:
    """The search line and the footer shared the bottom row: typed text and count never showed."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SMALL) as pilot:
        await opened(pilot, app, "run-done")
        await press(pilot, "r", lambda: isinstance(app.screen, ReportScreen))
        bar = app.screen.query_one(FindBar)
        await press(pilot, "slash", lambda: bar.is_open)
        await pilot.press(*"task")
        count = bar.query_one("#find-count", Static)
        await until(pilot, lambda: shown(count).startswith("1 of "))
        footer = app.screen.query_one("KeyFooter")
        assert bar.region.height == 1 and bar.region.bottom <= footer.region.y
        assert bar.query_one(Input).value == "task"


async def test_a_tie_breaker_target_is_chosen_by_click_then_enter(workbench: Workbench) -> None:
    """One click committed a target."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot, app, "run-tie")
        await until(pilot, lambda: prompt_ready(app, TieBreakPrompt))
        prompt = app.screen
        targets = prompt.query_one("#prompt-targets")
        before = targets.highlighted
        other = 0 if before else 1
        first = targets.content_region.offset - targets.region.offset
        await pilot.click(targets, offset=(first.x + 2, first.y + other))
        await until(pilot, lambda: targets.highlighted == other)
        assert app.screen is prompt, "a click only highlights"
        await press(pilot, "enter", lambda: app.screen is not prompt)


# -- every size -------------------------------------------------------------------------------


async def test_at_80x24_the_form_can_be_filled_and_started_from_any_field(tmp_path: Path) -> None:
    """Only the query box's top border showed, the first Tab focused an invisible scroll
    container, and there was no key to start."""
    app = WorkbenchApp(Workbench(workspace=tmp_path))
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen) and app.screen.ready)
        home = app.screen
        options = home.query_one("#workflows")
        while home.chosen.name != "deep_research":
            await press(pilot, "down", lambda h=options.highlighted: options.highlighted != h)
        await until(pilot, lambda: home.ready and "query" in home.fields)
        query = home.fields["query"]
        await press(pilot, "tab", lambda: app.focused is query)
        form = home.query_one("#form")
        for field in home.fields.values():
            if app.focused is not field:
                await press(pilot, "tab", lambda f=field: app.focused is f)
            await until(
                pilot,
                lambda f=field: form.region.contains_region(f.region),
            )
        assert isinstance(home.fields["domain"], Select), "a declared choice set is a list"
        query.focus()
        await until(pilot, lambda: app.focused is query)
        await pilot.press(*"asyncio")
        home.fields["max_rounds"].focus()
        await until(pilot, lambda: app.focused is home.fields["max_rounds"])
        started: list[tuple[Path, dict]] = []
        app.start_run = lambda path, inputs: started.append((path, inputs))  # type: ignore[method-assign]
        await press(pilot, "ctrl+s", lambda: bool(started))
        assert started[0][1]["query"] == "asyncio" and started[0][1]["domain"] is None


async def test_form_labels_wrap_instead_of_being_cut(tmp_path: Path) -> None:
    app = WorkbenchApp(Workbench(workspace=tmp_path))
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen) and app.screen.ready)
        home = app.screen
        options = home.query_one("#workflows")
        while home.chosen.name != "deep_research":
            await press(pilot, "down", lambda h=options.highlighted: options.highlighted != h)
        await until(pilot, lambda: home.ready and "domain" in home.fields)
        label = next(
            each for each in home.query(".form-label") if str(each.render()).startswith("domain")
        )
        await until(pilot, lambda: label.size.width > 0)
        lines = [label.render_line(y).text for y in range(label.size.height)]
        assert "inferred from the corpus" in " ".join(" ".join(lines).split())


# -- the log ----------------------------------------------------------------------------------


def provider(run_id: str, seq: int, state: str, calls: int) -> ProviderState:
    return ProviderState(
        run_id=run_id,
        seq=seq,
        provider="gemini",
        snapshot={"state": state, "requests_total": calls},
    )


def test_a_provider_that_stays_closed_is_logged_once() -> None:
    """98 provider_state lines for 19 real transitions (``provider gemini: CLOSED`` again and
    again); every transition stays in the log."""
    view = RunView(run_id="r")
    events: list[RunEvent] = [
        provider("r", 1, "CLOSED", 1),
        provider("r", 2, "CLOSED", 2),
        provider("r", 3, "OPEN", 3),
        provider("r", 4, "OPEN", 4),
        provider("r", 5, "HALF_OPEN", 4),
        provider("r", 6, "CLOSED", 5),
        provider("r", 7, "CLOSED", 6),
    ]
    view.apply_all(events)
    assert [line.seq for line in view.log] == [1, 3, 5, 6]
    assert view.providers["gemini"]["requests_total"] == 6, "the panel still gets every count"


async def test_long_log_lines_wrap_at_80_columns(workbench: Workbench) -> None:
    """At 80 columns the chaos demo's payoff read ``anthropic: tripped 2x (ra``."""
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SMALL) as pilot:
        screen = await opened(pilot, app, "run-mid")
        lines = screen.query_one(LogLines)
        await until(pilot, lambda: lines.size.height > 0)
        await until(
            pilot,
            lambda: (
                lines.virtual_size.height > len(lines.lines)
                and lines.scroll_offset.y == lines.max_scroll_y > 0
            ),
        )
        rows = [lines.render_line(y).text for y in range(lines.size.height)]
        last = lines.lines[-1]
        assert len(last.text) > lines.size.width - 30, "the last line is longer than its room"
        assert "".join(last.text.split()) in "".join("".join(rows).split())


async def test_research_stages_are_folded_until_the_filter_asks(
    workspace: Path, workbench: Workbench
) -> None:
    """292 of 466 events were ``domain stage …`` lines."""
    events: list[RunEvent] = research_events("run-stages", upto_round=1)
    events[2:2] = [
        Domain(
            run_id="run-stages",
            name=STAGE,
            step_id="intake_scope",
            payload={"stage": stage, "status": "ok"},
        )
        for stage in ("retrieval", "validated_result")
    ]
    with RunStore(workspace / "runs.sqlite") as store:
        store_events(store, "run-stages", events)
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot, app, "run-stages")
        lines = screen.query_one(LogLines)
        stages = [line for line in screen.view.log if line.folded]
        assert [line.text for line in stages] == ["stage retrieval ok", "stage validated_result ok"]
        assert not any(line.folded for line in lines.lines)
        log = screen.query_one("#log")
        assert "2 stage lines folded" in str(log.border_subtitle)
        await press(pilot, "slash", lambda: isinstance(app.focused, Input))
        await pilot.press(*"stage")
        await until(pilot, lambda: [line.folded for line in lines.lines] == [True, True])
