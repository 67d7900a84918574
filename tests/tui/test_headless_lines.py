"""One event describer (engine/event_lines.py, tui/present/event_lines.py), styled by each surface.

The console printer shows the describer's words for every event it prints; a
domain event is worded by the describer its package hands in, or shown as name
and payload without one.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from engine import events as ev
from engine.event_lines import EventLine
from engine.states import RoutingSignal, RunStatus
from tui.present.console import SafeConsole, cell_width
from tui.present.event_lines import describe
from tui.present.headless import HeadlessPrinter, console_style, styled
from tui.present.status_tone import STATUS_TONES, tone

pytestmark = pytest.mark.timeout(30)

EVENTS: list[ev.RunEvent] = [
    ev.RunStarted(run_id="r", workflow="wf", source="wf.yaml", engine="kahn", engine_reason="auto"),
    ev.StepStarted(run_id="r", step_id="plan", iteration=2, attempt=3),
    ev.StepFinished(
        run_id="r",
        step_id="plan",
        duration_s=1.5,
        llm_calls=3,
        fallback_calls=2,
        tokens=40,
        providers=["openai"],
        outputs={"topic": "owls"},
    ),
    ev.StepSkipped(run_id="r", step_id="escalate", reason="not routed (by classify)"),
    ev.StepFailed(run_id="r", step_id="boom", error="DemoFailure: no", optional=True),
    ev.StepFailed(run_id="r", step_id="after", error="boom failed", upstream=True),
    ev.StepRetrying(run_id="r", step_id="plan", attempt=2, error="timeout"),
    ev.RouteDecided(
        run_id="r",
        step_id="classify",
        signal=RoutingSignal(
            decision="advance", next_step_id="ship", route="condition", reason="score > 0.5"
        ),
    ),
    ev.InterruptRaised(
        run_id="r",
        interrupt_id="i1",
        step_id="plan",
        interrupt_kind="approval",
        prompt="Approve the plan?",
        options=["approve", "reject"],
    ),
    ev.InterruptResolved(
        run_id="r", interrupt_id="i1", step_id="plan", answer={"action": "edit", "value": "x"}
    ),
    ev.ProviderState(run_id="r", provider="openai", snapshot={"state": "OPEN"}),
    ev.Budget(
        run_id="r",
        step_runs=1,
        llm_calls=2,
        tokens=3,
        max_step_runs=10,
        max_llm_calls=20,
        token_budget=30,
    ),
    ev.PolicyViolation(run_id="r", rule="max_llm_calls", detail="21 > 20"),
    ev.Log(run_id="r", level="warning", message="slow provider"),
    ev.RunFinished(run_id="r", status=RunStatus.PARTIAL, reason="safety bound"),
    ev.Domain(run_id="r", name="demo.thing", payload={"n": 1}),
]


def printed(printer: HeadlessPrinter, events: list[ev.RunEvent]) -> list[str]:
    console = printer.console
    with console.capture() as capture:
        printer(events)
    return capture.get().splitlines()


def test_every_event_kind_is_described_and_the_examples_cover_them_all() -> None:
    kinds = {
        get_args(cls.model_fields["kind"].annotation)[0]
        for cls in get_args(get_args(ev.RunEvent)[0])
    }
    assert {event.kind for event in EVENTS} == kinds
    for event in EVENTS:
        line = describe(event)
        assert line.text and line.text != event.kind, event.kind


def test_the_console_prints_the_describers_words_for_every_event_it_shows() -> None:
    printer = HeadlessPrinter(Console(width=400, color_system=None), show_domain=True)
    lines = printed(printer, EVENTS)
    shown = [e for e in EVENTS if e.kind not in ("provider_state", "budget")]
    assert len(lines) == len(shown)
    for line, event in zip(lines, shown):
        line_words = describe(event)
        assert line_words.text in line, (line, line_words)
        assert line_words.outputs in line


def test_the_words_the_cli_relies_on() -> None:
    texts = [describe(event).text for event in EVENTS]
    assert "plan started (iteration 2, attempt 3)" in texts
    assert "escalate skipped: not routed (by classify)" in texts
    assert any(t.startswith("classify routes to ship") for t in texts)
    assert any(t.startswith("plan asks: Approve the plan? [approve / reject]") for t in texts)
    assert 'plan answered: edit "x"' in texts
    finished = describe(EVENTS[2])
    assert "3 calls, 2 from the built-in fallback, 40 tokens via openai" in finished.text
    assert finished.level == "warning" and finished.outputs == '{"topic": "owls"}'


def test_domain_events_are_worded_by_their_package_or_shown_as_name_and_payload() -> None:
    event = ev.Domain(run_id="r", name="demo.thing", payload={"n": 1})
    assert describe(event).text == 'demo.thing {"n": 1}'
    own = EventLine("the thing happened", level="warning")
    assert describe(event, lambda e: own if e.name == "demo.thing" else None) == own
    assert describe(event, lambda e: None).text == 'demo.thing {"n": 1}'
    console = HeadlessPrinter(Console(width=200, color_system=None), domain=lambda e: own)
    assert printed(console, [event]) == []
    console.show_domain = True
    assert printed(console, [event])[0].endswith("· the thing happened")


def test_the_console_colours_a_line_by_its_status_tone_and_its_level() -> None:
    printer = HeadlessPrinter(Console(width=200))
    finished = printer.line(ev.RunFinished(run_id="r", status=RunStatus.COMPLETED))
    assert finished is not None and "[bold green]" in finished
    skipped = printer.line(EVENTS[3])
    assert skipped is not None and f"[{console_style('SKIPPED')}]" in skipped
    failed = printer.line(EVENTS[4])
    assert failed is not None and "[red]" in failed
    assert printer.line(EVENTS[10]) is None and printer.line(EVENTS[11]) is None


@pytest.mark.parametrize("status", [s.value for s in RunStatus])
def test_every_run_status_has_a_tone(status: str) -> None:
    assert status in STATUS_TONES
    assert styled(status) == f"[{console_style(status)}]{status}[/]"
    assert tone(status.lower()) == tone(status) != "plain"


TEXTS = st.lists(
    st.sampled_from(
        [
            *"ab [/]\\:;{}\"' \t\n\r\x1b\x07\x9b\u202e\u00a0é漢😀●✔\u0301\u200d\ufe0f",
            ":smile:",
            "[bold]",
            "\\[",
            "word ",
        ]
    ),
    max_size=40,
).map("".join)
"""Text from outside with what rich's markup and layout act on: tags, escapes, emoji codes,
control and format characters, tabs, line breaks, wide characters, long words."""


def written(console: Console, write: Callable[[], None]) -> str:
    """What ``write`` writes to ``console``'s file (no capture: the printer's own way out)."""
    console.file = io.StringIO()
    write()
    return console.file.getvalue()


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(TEXTS, min_size=1, max_size=6),
    width=st.integers(min_value=10, max_value=120),
    safe=st.booleans(),
    mono=st.floats(min_value=0, max_value=1e6),
)
def test_a_console_without_style_shows_the_same_lines_however_they_are_written(
    texts: list[str], width: int, safe: bool, mono: float
) -> None:
    """The printer writes the lines a console shows as their bare text together, and prints
    the others as markup (tui/present/console.py): the output is what printing every line's
    markup writes, whatever the text, the width and the console."""
    events: list[ev.RunEvent] = []
    for number, text in enumerate(texts):
        events += [
            ev.StepStarted(run_id="r", step_id=f"s{number}", mono=mono),
            ev.StepFinished(run_id="r", step_id=f"s{number}", outputs={"k": text}, mono=mono),
            ev.StepSkipped(run_id="r", step_id=f"s{number}", reason=text),
            ev.Log(run_id="r", level="warning", message=text),
            ev.RunFinished(run_id="r", status=RunStatus.FAILED, reason=text),
        ]
    console = (SafeConsole if safe else Console)(width=width, color_system=None)
    printer = HeadlessPrinter(console)
    markups = [line for event in events if (line := printer.line(event))]

    def line_by_line() -> None:
        for line in markups:
            console.print(line, highlight=False)

    expected = written(console, line_by_line)
    assert written(console, lambda: printer(events)) == expected
    assert printed(printer, events) == expected.splitlines()


@pytest.mark.parametrize("text", ["a\u200db", "\u2764\ufe0f", "\U0001f468\u200d\U0001f469\ufe0f"])
def test_a_line_with_a_joiner_or_a_variation_selector_is_measured_as_rich_measures_it(
    text: str,
) -> None:
    """Either character alone changes the width of those around it."""
    assert cell_width(text) == cell_len(text)


def test_a_console_with_colours_prints_every_line_as_its_markup() -> None:
    """Only a console that draws no style takes a line's bare text: on one with colours every
    line is printed as its markup, coloured and unhighlighted, as it was printed one by one."""
    console = Console(width=120, color_system="standard", force_terminal=True)
    printer = HeadlessPrinter(console)
    shown = [event for event in EVENTS if printer.line(event)]
    markups = [line for event in shown if (line := printer.line(event))]

    def line_by_line() -> None:
        for line in markups:
            console.print(line, highlight=False)

    expected = written(console, line_by_line)
    assert "\x1b[" in expected
    assert written(console, lambda: printer(shown)) == expected


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_a_lines_width_is_what_rich_measures(text: str) -> None:
    """The printer's measure of a line it may write as it is agrees with rich's."""
    if text.isprintable():
        assert cell_width(text) == cell_len(text)
