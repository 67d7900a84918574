"""The app reads research events through research/events.py's types and words every event
with the engine's one describer (research's own events worded by research)."""

from __future__ import annotations

import pytest
from rich.console import Console

from engine.events import Domain
from research.events import (
    COALESCED,
    ROUND_SCORED,
    CoalescedPayload,
    RoundScoredPayload,
    describe_research_event,
)
from tests.tools.sample_run import research_events, round_payload
from tui.app.run_state import RunView
from tui.present.event_lines import describe as describe_event
from tui.present.headless import HeadlessPrinter

pytestmark = pytest.mark.timeout(30)


def test_the_app_log_and_the_console_say_the_same_words_for_a_whole_run() -> None:
    events = research_events("r")
    view = RunView()
    view.apply_all(events)
    printer = HeadlessPrinter(
        Console(width=1000, color_system=None), show_domain=True, domain=describe_research_event
    )
    with printer.console.capture() as capture:
        printer(events)
    console_lines = iter(capture.get().splitlines())
    for event, logged in zip(events, view.log, strict=True):
        words = describe_event(event, describe_research_event).text
        assert logged.text == words
        if event.kind not in ("provider_state", "budget"):
            assert words in next(console_lines)


def test_round_scores_are_folded_as_research_types() -> None:
    view = RunView()
    view.apply_all(research_events("r"))
    assert all(isinstance(scored, RoundScoredPayload) for scored in view.rounds.values())
    assert isinstance(view.coalesced, CoalescedPayload) and view.selected_round == 3
    second = view.rounds[2]
    assert second.critical_contradictions == 1 and second.remediation == "full"
    assert view.rounds[3].dimensions["coverage"].tier == "Elite"


def test_a_round_score_its_type_rejects_changes_no_panel_and_is_logged_as_it_came() -> None:
    view = RunView()
    good = round_payload(1, ("High",) * 5, 0.8, "continue")
    view.apply(Domain(run_id="r", name=ROUND_SCORED, payload=good))
    bad = {**good, "round": 2, "remediation": []}
    parts = view.apply(Domain(run_id="r", name=ROUND_SCORED, payload=bad))
    assert parts == {"log"} and list(view.rounds) == [1]
    assert view.log[-1].text.startswith("research.round_scored {")
    parts = view.apply(Domain(run_id="r", name=COALESCED, payload={"selected_round": "x"}))
    assert parts == {"log"} and view.coalesced is None


def test_research_words_its_own_events() -> None:
    payload = round_payload(2, ("High", "Medium", "High", "High", "Elite"), 0.75, "continue")
    line = describe_research_event(Domain(run_id="r", name=ROUND_SCORED, payload=payload))
    assert line is not None
    assert (
        line.text == "round 2 scored: CI 0.75, gate not passed, 1 critical contradiction, continue"
    )
    assert line.status == "FAIL" and line.level == "warning"
    assert describe_research_event(Domain(run_id="r", name="agent.thought", payload={})) is None
