"""Live runs on the real KahnEngine, driven from the app: prompts reach the waiting step."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from engine.events import InterruptResolved, StepFinished
from engine.protocol import InterruptResponder, RunContext, TieBreakAnswer, TieBreakRequest
from engine.states import RunStatus, StepStatus
from engine.store import RunStore
from tui.app import WorkbenchApp
from tui.screens.run import RunScreen
from tui.widgets.prompts import ApprovalPrompt, TieBreakPrompt
from tui.workbench import SHIPPED_WORKFLOWS, Workbench

SIZE = (150, 46)


async def unsure_tie_breaker(request: TieBreakRequest) -> TieBreakAnswer:
    """A model that leans to the last valid target with confidence under every threshold."""
    return TieBreakAnswer(target=request.valid_targets[-1], confidence=0.4, reasoning="two claims are thin")


def demo_context(workspace: Path, inputs: dict[str, Any], responder: InterruptResponder) -> RunContext:
    return RunContext(store=RunStore(workspace / "runs.sqlite"), inputs=inputs, responder=responder,
                      tie_breaker=unsure_tie_breaker)


async def until(pilot, predicate: Callable[[], bool], rounds: int = 1000) -> None:
    """Let the app run until ``predicate`` holds (bounded by rounds, not by a time assertion)."""
    for _ in range(rounds):
        if predicate():
            return
        await pilot.pause(0.01)
    raise AssertionError("condition never held")


def live_workbench(tmp_path: Path) -> Workbench:
    return Workbench(workspace=tmp_path, context_factory=demo_context, shipped_dir=tmp_path / "none")


async def test_answering_an_approval_reaches_the_step_and_only_it_waits(tmp_path: Path) -> None:
    app = WorkbenchApp(live_workbench(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.start_run(SHIPPED_WORKFLOWS / "approval.yaml", {"topic": "launch"})
        await until(pilot, lambda: isinstance(app.screen, ApprovalPrompt))
        await until(pilot, lambda: screen.view.steps.get("warm_cache") is not None
                    and screen.view.steps["warm_cache"].status is StepStatus.SUCCEEDED)
        assert screen.view.steps["plan"].status is StepStatus.WAITING_HUMAN
        assert screen.view.steps["execute"].status is StepStatus.PENDING
        await pilot.press("f2")
        await until(pilot, lambda: screen.view.status == "COMPLETED")
        assert isinstance(app.screen, RunScreen)
        run_id = screen.run_id
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    resolved = [e for e in store.events(run_id) if isinstance(e, InterruptResolved)]
    assert resolved[0].answer["action"] == "approve" and not resolved[0].automatic
    assert store.step_results(run_id)["execute"].status is StepStatus.SUCCEEDED
    store.close()


async def test_choosing_a_tie_breaker_target_routes_the_run(tmp_path: Path) -> None:
    app = WorkbenchApp(live_workbench(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.start_run(SHIPPED_WORKFLOWS / "demo_tiebreak.yaml", {})
        await until(pilot, lambda: isinstance(app.screen, TieBreakPrompt))
        prompt = app.screen
        assert prompt.valid == ["publish", "revise"]
        assert prompt.event.payload["suggestion"] == "revise"
        await pilot.press("up", "enter")
        await until(pilot, lambda: screen.view.status == "COMPLETED")
        steps = screen.view.steps
        assert steps["publish"].status is StepStatus.SUCCEEDED
        assert steps["revise"].status is StepStatus.SKIPPED
        assert steps["review"].route is not None and steps["review"].route.next_step_id == "publish"


async def test_a_run_left_waiting_is_answered_and_resumed_later(tmp_path: Path) -> None:
    workbench = live_workbench(tmp_path)
    app = WorkbenchApp(workbench)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.start_run(SHIPPED_WORKFLOWS / "approval.yaml", {})
        await until(pilot, lambda: isinstance(app.screen, ApprovalPrompt))
        run_id = screen.view.run_id
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.get_run(run_id).status is RunStatus.WAITING
    assert [r.step_id for r in store.pending_interrupts(run_id)] == ["plan"]
    store.close()

    app = WorkbenchApp(live_workbench(tmp_path), open_run_id=run_id)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ApprovalPrompt))
        await pilot.press("f2")
        screen = app.screen_stack[-1]
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: screen.view.status == "COMPLETED")
        finished = {e.step_id for e in screen.events if isinstance(e, StepFinished)}
        assert {"plan", "warm_cache", "execute"} <= finished
