"""Prompts ready to decide on, step detail, search, copy and the round diff (issue 14, 2 and 4).

Real app through Pilot over a real run store file; keys go one at a time, each waiting for its
effect. The plan's answer is checked against the research step's own output model, and a model
call's journal entry is made by the app's real model caller over a real (built-in) router.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static
from textual.widgets.markdown import MarkdownBlock

from engine.context import InterruptAnswer, JournalEntry, StepInfo, StreamingModelCaller
from engine.live import LiveChannel, OutputCoalescer
from engine.states import StepStatus
from engine.store import RunStore
from research.steps.intake import IntakeOutput
from router.config import RouterConfig
from router.models import ChatMessage, ChatRequest
from tests.tools.sample_run import PLAN_OUTPUTS, research_events
from tests.tui.pilot_wait import press, prompt_ready, until
from tests.tui.test_live_runs import SIZE as LIVE_SIZE
from tests.tui.test_live_runs import live_workbench, start_on
from tui.app.app import WorkbenchApp
from tui.app.model_calls import model_calls
from tui.app.plan_draft import PlanDraft, PlanEditRefused
from tui.app.report_sections import report_sections, section_at
from tui.app.round_diff import diff_rounds
from tui.app.run_state import RunView, StepView
from tui.app.screens.report import ReportScreen
from tui.app.screens.round_diff import RoundDiffScreen
from tui.app.screens.run import RunScreen
from tui.app.screens.step_detail import StepDetailScreen
from tui.app.widgets.find_bar import FindBar, plain_text
from tui.app.widgets.plan_editor import PlanEditor
from tui.app.widgets.prompts import ApprovalPrompt, TieBreakPrompt
from tui.launch.agents_wiring import AgentAwareModelCaller
from tui.launch.journal import SENT_KEY
from tui.launch.wiring import RouterModelCaller, build_workbench_router
from tui.launch.workbench import SHIPPED_WORKFLOWS, Workbench

pytestmark = pytest.mark.timeout(240)
SIZE = (120, 40)


def texts(draft: PlanDraft) -> list[str]:
    return draft.texts()


# -- the plan, as plain logic ------------------------------------------------------------------
def test_a_plan_edit_keeps_ids_and_drops_terms_that_described_the_old_text() -> None:
    draft = PlanDraft.from_outputs(PLAN_OUTPUTS)
    assert draft is not None and not draft.changed
    draft.edit(1, "  How is the   next task chosen? ")
    assert draft.questions[1] == {
        "id": "q2",
        "text": "How is the next task chosen?",
        "facet": "mechanism",
        "key_terms": [],
    }
    draft.edit(0, "What is a task?")  # unchanged text keeps its terms
    assert draft.questions[0]["key_terms"] == ["task"]
    assert draft.changed


def test_added_questions_get_the_next_free_id_and_the_plan_stays_valid() -> None:
    draft = PlanDraft.from_outputs(PLAN_OUTPUTS)
    assert draft is not None
    assert draft.add(0, "Who wrote the event loop?") == 1
    assert draft.questions[1] == {
        "id": "q4",
        "text": "Who wrote the event loop?",
        "facet": "",
        "key_terms": [],
    }
    draft.delete(3)
    assert draft.add(-1, "What came first?") == 0
    assert [q["id"] for q in draft.questions] == ["q5", "q1", "q4", "q2"]
    assert draft.move(0, 1) == 1 and draft.move(3, 1) == 3 and draft.move(0, -1) == 0
    assert [q["id"] for q in draft.questions] == ["q1", "q5", "q4", "q2"]
    plan = IntakeOutput.model_validate({**PLAN_OUTPUTS, **draft.answer()})
    assert [q.id for q in plan.sub_questions] == ["q1", "q5", "q4", "q2"]


def test_a_plan_is_never_left_empty_or_with_an_empty_question() -> None:
    draft = PlanDraft.from_outputs({"sub_questions": [{"id": "q1", "text": "Only one?"}]})
    assert draft is not None
    with pytest.raises(PlanEditRefused, match="at least one sub-question"):
        draft.delete(0)
    with pytest.raises(PlanEditRefused, match="cannot be empty"):
        draft.edit(0, "   ")
    assert texts(draft) == ["Only one?"]
    assert PlanDraft.from_outputs({"sub_questions": ["no", "text field"]}) is None
    assert PlanDraft.from_outputs({"domain": "software"}) is None


# -- the plan, from the keyboard ----------------------------------------------------------------
async def type_text(pilot: Any, line: Input, text: str) -> None:
    for char in text:
        key = "space" if char == " " else char
        await press(pilot, key, lambda before=line.value: line.value != before)


def option_texts(editor: PlanEditor) -> list[str]:
    plan_list = editor.plan_list
    return [str(plan_list.get_option_at_index(i).prompt) for i in range(plan_list.option_count)]


async def test_the_plan_is_edited_one_question_at_a_time_and_sent_back_as_the_plan(
    workbench: Workbench,
) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-ask")
        assert screen is not None
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        prompt = app.screen
        assert isinstance(prompt, ApprovalPrompt)
        editor = prompt.query_one(PlanEditor)
        plan_list, line = editor.plan_list, prompt.query_one("#plan-input", Input)
        assert app.focused is plan_list
        assert option_texts(editor) == [
            " 1. What is a task?",
            " 2. How does the loop pick the next one?",
            " 3. What suspends a running task?",
        ]
        # edit the second question
        await press(pilot, "down", lambda: plan_list.highlighted == 1)
        await press(pilot, "e", lambda: app.focused is line)
        assert line.value == "How does the loop pick the next one?"
        await press(pilot, "ctrl+u", lambda: line.value == "")
        await type_text(pilot, line, "Who runs next?")
        await press(pilot, "enter", lambda: app.focused is plan_list)
        assert option_texts(editor)[1] == " 2. Who runs next?"
        # add one after it, then cancel a second addition with Escape
        await press(pilot, "n", lambda: app.focused is line)
        await type_text(pilot, line, "Why")
        await press(pilot, "enter", lambda: plan_list.option_count == 4)
        await press(pilot, "n", lambda: app.focused is line)
        await press(pilot, "escape", lambda: app.focused is plan_list)
        assert isinstance(app.screen, ApprovalPrompt) and plan_list.option_count == 4
        # an empty question is refused in one line, and nothing changes
        await press(pilot, "enter", lambda: app.focused is line)
        await press(pilot, "ctrl+u", lambda: line.value == "")
        error = editor.query_one("#plan-error", Static)
        await press(pilot, "enter", lambda: "cannot be empty" in plain_text(error))
        await press(pilot, "escape", lambda: app.focused is plan_list)
        # move the new question to the top, delete the first original one
        assert plan_list.highlighted == 2
        await press(pilot, "shift+up", lambda: plan_list.highlighted == 1)
        await press(pilot, "left_square_bracket", lambda: plan_list.highlighted == 0)
        await press(pilot, "down", lambda: plan_list.highlighted == 1)
        await press(pilot, "d", lambda: plan_list.option_count == 3)
        assert option_texts(editor) == [
            " 1. Why",
            " 2. Who runs next?",
            " 3. What suspends a running task?",
        ]
        # the JSON is one key away and shows the same plan
        views = prompt.query_one("#prompt-views")
        await press(pilot, "ctrl+t", lambda: views.current == "prompt-editor")
        assert '"text": "Why"' in prompt.query_one("#prompt-editor").text
        await press(pilot, "ctrl+t", lambda: views.current == "plan-editor")
        screen.resume_requested = 0  # type: ignore[attr-defined]
        app.resume_run = lambda s: setattr(s, "resume_requested", 1)  # type: ignore[method-assign]
        await press(pilot, "ctrl+a", lambda: isinstance(app.screen, RunScreen))
    store = RunStore(workbench.runs_db)
    [record] = store.interrupts("run-ask")
    store.close()
    answer = record.answer
    assert answer is not None and answer.action == "edit"
    plan = IntakeOutput.model_validate(answer.value)
    assert [(q.id, q.text) for q in plan.sub_questions] == [
        ("q4", "Why"),
        ("q2", "Who runs next?"),
        ("q3", "What suspends a running task?"),
    ]
    assert plan.sub_questions[1].key_terms == [] and plan.sub_questions[2].key_terms == [
        "await",
        "future",
    ]
    assert plan.query == PLAN_OUTPUTS["query"]


async def test_an_unchanged_plan_is_approved_as_proposed(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    answers: list[InterruptAnswer | None] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.open_run("run-ask")
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        prompt = app.screen
        prompt.dismiss = answers.append  # type: ignore[method-assign]
        line, error = prompt.query_one("#plan-input", Input), prompt.query_one("#prompt-error")
        await press(pilot, "e", lambda: app.focused is line)
        await press(pilot, "ctrl+a", lambda: "finish the question first" in plain_text(error))
        assert answers == [] and app.focused is line
        await press(pilot, "escape", lambda: app.focused is not line)
        await press(pilot, "ctrl+a", lambda: bool(answers))
    assert answers == [InterruptAnswer(action="approve")]


# -- the tie-breaker, from the real engine --------------------------------------------------------
async def test_the_tie_breaker_prompt_shows_outputs_conditions_and_why_it_asks(
    tmp_path: Path,
) -> None:
    app = WorkbenchApp(live_workbench(tmp_path))
    async with app.run_test(size=LIVE_SIZE) as pilot:
        await pilot.pause()
        start_on(app, SHIPPED_WORKFLOWS / "demo_tiebreak.yaml", {}, "kahn")
        await until(pilot, lambda: prompt_ready(app, TieBreakPrompt))
        prompt = app.screen
        assert plain_text(prompt.query_one("#prompt-why", Static)) == (
            "asking you because its confidence 0.40 is below the threshold 0.70"
        )
        payload = prompt.event.payload
        assert payload["outputs"]["status"] == "NEEDS_WORK"
        assert "NEEDS_WORK" in rendered(prompt, "#prompt-outputs")
        shown = rendered(prompt, "#prompt-conditions")
        assert "outputs.status == 'VERIFIED'" in shown and "outputs.status == 'BLOCKED'" in shown
        assert [c["matched"] for c in payload["evaluated_conditions"]] == [False, False]
        await press(pilot, "escape", lambda: isinstance(app.screen, RunScreen))


def rendered(screen: Any, selector: str) -> str:
    """What a Static shows, as the terminal draws it."""
    widget = screen.query_one(selector, Static)
    return "\n".join(strip.text for strip in widget.render_lines(widget.region.reset_offset))


# -- step detail ---------------------------------------------------------------------------------
async def journal_a_model_call(workbench: Workbench, run_id: str, step_id: str) -> None:
    """One real call through the app's model caller over a built-in-only router, journaled."""
    router = build_workbench_router(None, config=RouterConfig(), environ={})
    caller = AgentAwareModelCaller(
        RouterModelCaller(router), router, lambda c: build_workbench_router(None, config=c)
    )
    request = ChatRequest(
        task="research.scope",
        messages=[
            ChatMessage(role="system", content="You plan research questions."),
            ChatMessage(role="user", content="Plan: How do asyncio tasks get scheduled?"),
        ],
        inputs={"query": "How do asyncio tasks get scheduled?", "max_sub_questions": 2},
    )
    # the engine streams through any caller that can (StreamingModelCaller): the app's can
    assert isinstance(caller, StreamingModelCaller)
    info = StepInfo(run_id=run_id, step_id=step_id, iteration=0)
    try:
        response = await caller.stream(request, info, lambda kind, provider, text: None)
        payload = caller.encode(response)
        assert caller.decode(request, payload).content == response.content
        assert payload[SENT_KEY] == caller.encode(await caller.complete(request, info))[SENT_KEY]
    finally:
        await router.aclose()
    store = workbench.store()
    store.journal_put(run_id, step_id, 0, 0, JournalEntry(kind="retrieve", payload=[]))
    store.journal_put(run_id, step_id, 0, 1, JournalEntry(kind="llm", payload=payload))


async def test_step_detail_shows_the_prompt_and_answer_as_messages_and_searches_them(
    workbench: Workbench,
) -> None:
    await journal_a_model_call(workbench, "run-done", "intake_scope")
    [call] = model_calls(workbench.store(), "run-done", "intake_scope", 0)
    assert call.index == 1 and [m.role for m in call.sent] == ["system", "user"]
    assert '"max_sub_questions":2' in call.sent[1].content  # the inputs as sent on the wire
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        assert screen is not None
        await until(pilot, lambda: "intake_scope" in screen.view.steps)
        await press(pilot, "enter", lambda: isinstance(app.screen, StepDetailScreen))
        detail = app.screen
        assert detail.step.id == "intake_scope"
        messages = [plain_text(m) for m in detail.query(".detail-message").results(Static)]
        assert messages[0].startswith("system\nYou plan research questions.")
        assert messages[1].startswith("user\nPlan: How do asyncio tasks get scheduled?")
        assert messages[2].startswith(f"answer from {call.provider}\n{call.answer}")
        heading = plain_text(detail.query_one(".detail-call", Static))
        assert heading.startswith(f"call 2  {call.provider}")
        assert f"{call.input_tokens} in / {call.output_tokens} out tokens" in heading
        assert f"${call.cost_usd:.4f}" in heading and "s · $" in heading
        assert "cost $" in plain_text(detail.query_one("#detail-facts", Static))
        # search
        bar = detail.query_one(FindBar)
        await press(pilot, "slash", lambda: bar.is_open and isinstance(app.focused, Input))
        line = bar.query_one(Input)
        await type_text(pilot, line, "plan")
        assert plain_text(bar.query_one("#find-count", Static)) == f"1 of {len(bar.hits)}"
        assert len(bar.hits) >= 2 and bar.hits[0].has_class("-find-current")
        await press(pilot, "enter", lambda: bar.current == 1)
        assert bar.hits[1].has_class("-find-current") and not bar.hits[0].has_class("-find-current")
        await press(pilot, "escape", lambda: not bar.is_open)
        assert not detail.query(".-find-hit")
        # copy: the outputs, then the run id
        await press(pilot, "c", lambda: app.clipboard.startswith("{"))
        assert '"sub_questions": 2' in app.clipboard
        await press(pilot, "i", lambda: app.clipboard == "run-done")
        await press(pilot, "escape", lambda: app.screen is screen)


async def test_step_detail_shows_the_running_steps_model_output_as_it_streams(
    workbench: Workbench,
) -> None:
    channel = LiveChannel()
    step = StepView(id="analyst_ai_r2", uses="research.analyst_ai", status=StepStatus.RUNNING)
    ticks = iter(range(100))
    stream = OutputCoalescer(
        channel,
        run_id="run-mid",
        step_id="analyst_ai_r2",
        iteration=0,
        call_index=0,
        interval_s=1.0,
        clock=lambda: float(next(ticks)) * 2,
    )
    other = OutputCoalescer(
        channel, run_id="run-mid", step_id="analyst_swe_r2", iteration=0, call_index=0
    )
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.push_screen(StepDetailScreen(step, run_id="run-mid", live=channel))
        await until(pilot, lambda: bool(app.screen.query("#detail-live")))
        live = app.screen.query_one("#detail-live", Static)
        assert plain_text(live) == "waiting for the model…"
        stream.on_event("start", "openai", "")
        await until(pilot, lambda: plain_text(live).startswith("call 1 · openai  streaming…"))
        stream.on_event("text", "openai", "Tasks are ")
        await until(pilot, lambda: plain_text(live).endswith("\nTasks are "))
        other.on_event("text", "anthropic", "not this step")
        stream.on_event("abort", "openai", "connection reset")
        await until(pilot, lambda: "its text is void" in plain_text(live))
        stream.on_event("start", "anthropic", "")
        stream.on_event("text", "anthropic", "Tasks run from the ready queue.")
        await until(pilot, lambda: plain_text(live).endswith("the ready queue."))
        stream.close()
        await until(pilot, lambda: "done" in plain_text(live).splitlines()[0])
        assert plain_text(live).startswith("call 1 · anthropic")
        assert "not this step" not in plain_text(live)
        await press(pilot, "escape", lambda: not isinstance(app.screen, StepDetailScreen))
    assert channel._listeners == [], "the detail stops listening when it closes"


# -- report: search and copy ------------------------------------------------------------------------
def test_report_sections_run_to_the_next_heading_of_the_same_level() -> None:
    text = (
        "# Title\n\nintro\n\n## A\n\na\n\n```\n# not a heading\n```\n\n### A.1\n\nx\n\n## B\n\nb\n"
    )
    sections = report_sections(text)
    assert [(s.title, s.level) for s in sections] == [("Title", 1), ("A", 2), ("A.1", 3), ("B", 2)]
    a = sections[1]
    assert a.text == "## A\n\na\n\n```\n# not a heading\n```\n\n### A.1\n\nx\n"
    assert section_at(text, text.splitlines().index("x")) == sections[2]
    assert section_at("no heading\n", 0) is None


async def test_the_report_is_searched_and_a_section_copied(workbench: Workbench) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.open_run("run-done")
        await press(pilot, "r", lambda: isinstance(app.screen, ReportScreen))
        report = app.screen
        bar = report.query_one(FindBar)
        await press(pilot, "ctrl+f", lambda: bar.is_open and isinstance(app.focused, Input))
        await type_text(pilot, bar.query_one(Input), "call_soon")
        assert plain_text(bar.query_one("#find-count", Static)) == "1 of 1"
        assert "call_soon" in plain_text(bar.hits[0])
        await press(pilot, "escape", lambda: not bar.is_open)
        await press(pilot, "slash", lambda: bar.is_open)
        await type_text(pilot, bar.query_one(Input), "call_soon")
        await press(pilot, "enter", lambda: bar.current == 0)
        report.query_one("#report-body").focus()
        await press(pilot, "x", lambda: app.clipboard.startswith("## Findings"))
        assert app.clipboard == (
            "## Findings\n\n- Tasks are scheduled with `call_soon` [S1]\n"
            "- `await` on a pending future suspends the task [S2]\n"
        )
        await press(pilot, "i", lambda: app.clipboard == "run-done")
        await press(pilot, "c", lambda: app.clipboard.startswith("# How asyncio"))
        await press(pilot, "escape", lambda: not bar.is_open)
        await press(pilot, "escape", lambda: isinstance(app.screen, RunScreen))


# -- the round diff -------------------------------------------------------------------------------
def test_a_round_diff_names_new_evidence_claims_and_dimension_changes() -> None:
    view = RunView()
    view.apply_all(research_events("r"))
    diff = diff_rounds(view, 2, 3)
    assert diff.new_sources == ["PEP 525 – Asynchronous Generators"]
    assert diff.new_passages == 1
    assert diff.claims_added == ["call_soon appends a callback to the loop's ready queue."]
    assert diff.claims_dropped == ["The loop runs callbacks in the order they were scheduled."]
    changes = {
        c.name: (c.before.tier, c.after.tier) for c in diff.dimensions if c.before and c.after
    }
    assert changes["agreement"] == ("Medium", "High") and changes["recency"] == ("Low", "High")
    assert diff.ci[0] is not None and diff.ci[1] is not None and diff.ci[1] > diff.ci[0]
    unknown = diff_rounds(view, 3, 4)
    assert not unknown.evidence_known


async def test_the_round_diff_opens_from_the_run_screen_and_steps_between_pairs(
    workbench: Workbench,
) -> None:
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        await until(pilot, lambda: len(screen.view.rounds) == 3)
        await press(pilot, "d", lambda: isinstance(app.screen, RoundDiffScreen))
        diff = app.screen
        title = diff.query_one("#diff-title", Static)
        assert plain_text(title).startswith("round 2 → round 3")
        assert "PEP 525" in plain_text(diff.query_one("#diff-evidence", Static))
        assert "call_soon appends" in plain_text(diff.query_one("#diff-added", Static))
        assert "in the order" in plain_text(diff.query_one("#diff-dropped", Static))
        await press(pilot, "left", lambda: plain_text(title).startswith("round 1 → round 2"))
        assert "PEP 492" in plain_text(diff.query_one("#diff-evidence", Static))
        assert plain_text(diff.query_one("#diff-dropped", Static)) == "no claim dropped"
        await press(pilot, "escape", lambda: app.screen is screen)
        assert screen.key_acts("round_diff") is True
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.open_run("run-ask")
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt))
        assert screen.key_acts("round_diff") is False, "the footer does not offer it"
        assert "compares two scored rounds" in (screen.why_not("round_diff") or "")


async def test_a_link_in_a_report_is_not_opened_by_a_click(
    workbench: Workbench, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report written before its links were escaped (or by hand) may hold a document's link:
    a click on it opens nothing (the report links nowhere of the workbench's own)."""
    (workspace / "runs" / "run-done" / "report.md").write_text(
        "# A report\n\n[evil link](https://evil.example/steal)\n", encoding="utf-8"
    )
    app = WorkbenchApp(workbench)
    opened: list[str] = []
    monkeypatch.setattr(app, "open_url", lambda url, **_: opened.append(url))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.open_run("run-done")
        await press(pilot, "r", lambda: isinstance(app.screen, ReportScreen))
        [paragraph] = [
            block
            for block in app.screen.query(MarkdownBlock)
            if type(block).__name__ == "MarkdownParagraph"
        ]
        await pilot.click(paragraph, offset=(2, 0))
        await until(pilot, lambda: bool(app._notifications))
        [told] = [n.message for n in app._notifications]
    assert opened == []
    assert (
        told == "not opened: https://evil.example/steal (a link from a document the report quotes)"
    )
