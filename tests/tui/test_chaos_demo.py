"""`workbench demo chaos`: the demo's run in the real app, against the real loopback fault server.

The run's router publishes provider snapshots on the worker thread's loop; they become
``provider_state`` run events in the store, whose bus hands them to the screen's inbox, and the
screen folds them on its UI timer. The test answers the plan approval like a newcomer would and
then reads the stored events: breakers must have gone OPEN → HALF_OPEN → CLOSED during the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.events import ProviderState, RunEvent
from engine.states import RunStatus
from engine.store import RunStore
from router.fault_script import DEFAULT_SCRIPT_PATH, load_fault_script
from tests.tui.pilot_wait import prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.screens.run import RunScreen
from tui.app.widgets.prompts import ApprovalPrompt
from tui.commands.app_cmds import chaos_command
from tui.dev.chaos import BreakerWatch, chaos_job
from tui.launch.workbench import Workbench

SIZE = (150, 46)


def demo_default(name: str) -> Any:
    """The default of a `workbench demo chaos` option: the test runs what a newcomer runs."""
    [option] = [p for p in chaos_command.params if p.name == name]
    return option.default


def breaker_states(events: list[RunEvent]) -> dict[str, list[str]]:
    """Each provider's breaker states in order, repeats of the same state folded."""
    states: dict[str, list[str]] = {}
    for event in events:
        if isinstance(event, ProviderState):
            seen = states.setdefault(event.provider, [])
            state = event.snapshot["state"]
            if not seen or seen[-1] != state:
                seen.append(state)
    return states


def completes_a_cycle(states: list[str]) -> bool:
    return any(states[i : i + 3] == ["OPEN", "HALF_OPEN", "CLOSED"] for i in range(len(states)))


async def test_the_chaos_demo_trips_probes_and_closes_breakers_during_one_research_run(
    tmp_path: Path,
) -> None:
    job = chaos_job(tmp_path, time_scale=demo_default("time_scale"), query=demo_default("query"))
    app = WorkbenchApp(Workbench(workspace=tmp_path), run_job=job)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.run_id == job.run_id
        await until(pilot, lambda: prompt_ready(app, ApprovalPrompt), rounds=1200, pause=0.05)
        await pilot.press("f2")
        await until(pilot, lambda: not screen.live, rounds=2400, pause=0.05)
        assert screen.view.status == "COMPLETED"
        shown = [(e.seq, e.kind) for e in screen.events]
        panel_providers = set(screen.view.providers)

    with RunStore(tmp_path / "runs.sqlite") as store:
        assert store.get_run(job.run_id).status is RunStatus.COMPLETED
        events = store.events(job.run_id)
    assert shown == [(e.seq, e.kind) for e in events], (
        "every stored event reached the screen, in order"
    )

    scripted = set(load_fault_script(DEFAULT_SCRIPT_PATH).providers)
    assert scripted <= panel_providers
    states = breaker_states(events)
    cycled = sorted(name for name, seen in states.items() if completes_a_cycle(seen))
    assert len(cycled) >= 2, states

    calls = [
        e.payload
        for e in events
        if e.kind == "domain"
        and e.name == "research.stage"
        and e.payload["stage"] == "budget_reconcile"
    ]
    assert {call["provider"] for call in calls} & scripted, (
        "answers came over HTTP from the fault server"
    )
    assert not (tmp_path / "provider_stats.sqlite3").exists(), (
        "the demo keeps its breakers out of the workspace"
    )


def _state(provider: str, state: str, mono: float) -> ProviderState:
    return ProviderState.model_construct(
        run_id="r",
        seq=1,
        ts=0.0,
        mono=mono,
        kind="provider_state",
        provider=provider,
        snapshot={"state": state},
    )


def test_breaker_watch_reports_changes_and_counts_only_full_cycles() -> None:
    watch = BreakerWatch()
    timeline = [
        ("a", "CLOSED", 0.1),
        ("a", "CLOSED", 0.2),
        ("a", "OPEN", 0.5),
        ("b", "OPEN", 0.6),
        ("a", "HALF_OPEN", 1.0),
        ("a", "OPEN", 1.1),  # the probe failed: the cycle starts over
        ("b", "HALF_OPEN", 1.2),
        ("a", "HALF_OPEN", 2.0),
        ("a", "CLOSED", 2.4),
        ("b", "CLOSED", 2.5),
    ]
    changes = [watch.change(_state(p, s, t)) for p, s, t in timeline]
    assert changes == [True, False, True, True, True, True, True, True, True, True]
    assert watch.cycles == {"a": 1, "b": 1} and watch.first_cycle_s == 2.4
    assert watch.summary() == (
        "breaker cycles OPEN -> HALF_OPEN -> CLOSED: a 1, b 1; "
        "the first completed 2.4s into the run"
    )
    assert BreakerWatch().summary() == "no breaker went OPEN -> HALF_OPEN -> CLOSED during this run"
