"""`workbench demo chaos`: the demo's run in the real app, against the real loopback fault server.

The run's router publishes provider snapshots on the worker thread's loop; they become
``provider_state`` run events in the store, whose bus hands them to the screen's inbox, and the
screen folds them on its UI timer. The test answers the plan approval like a newcomer would and
then reads the stored events: breakers must have gone OPEN → HALF_OPEN → CLOSED during the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from rich.console import Console

from engine.events import ProviderState, RunEvent
from engine.states import RunStatus
from engine.store import RunStore
from router.clock import ManualClock
from router.config import RouterConfig
from router.errors import NoHandlerError
from router.fault.demo import demo_router_config
from router.fault.script import DEFAULT_SCRIPT_PATH, load_fault_script
from router.fault.server import FaultServer
from tests.tools.sample_run import snapshot
from tests.tui.pilot_wait import prompt_ready, until
from tui.app.app import WorkbenchApp
from tui.app.run_state import RunView
from tui.app.screens.run import RunScreen
from tui.app.widgets.prompts import ApprovalPrompt
from tui.app.widgets.providers_panel import providers_table
from tui.commands.app_cmds import chaos_command
from tui.demo.chaos import (
    PROBE_PROFILE,
    BreakerStory,
    BreakerWatch,
    chaos_job,
    close_every_breaker,
    probe_request,
)
from tui.launch.wiring import build_workbench_router
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


def test_the_breaker_story_says_why_each_transition_happened_and_sums_up() -> None:
    story = BreakerStory()
    tripped = {"open_reason": "rate_limit", "last_error": "rate_limit", "last_error_status": 429}
    timeline = [
        ("openai", {"state": "CLOSED"}, 0.1),
        ("openai", {"state": "OPEN", **tripped, "last_error_retry_after_s": 1.25}, 0.5),
        ("github", {"state": "OPEN", "open_reason": "5 consecutive failures"}, 0.7),
        ("openai", {"state": "HALF_OPEN", "open_reason": "rate_limit"}, 1.75),
        ("openai", {"state": "CLOSED"}, 1.9),
        ("github", {"state": "HALF_OPEN"}, 2.0),
        ("github", {"state": "OPEN", "last_error": "connection"}, 2.1),
        ("github", {"state": "HALF_OPEN"}, 3.0),
        ("github", {"state": "CLOSED"}, 3.2),
    ]
    lines = story.fold(_snap(p, snapshot, t) for p, snapshot, t in timeline)
    assert lines == LINES
    assert story.summary_lines() == SUMMARY
    story.fold([_snap("azure", {"state": "OPEN", "open_reason": "timeout"}, 4.0)])
    assert story.summary_lines()[0].endswith("not CLOSED at the end: azure")


LINES = [
    "   0.1s openai           new -> CLOSED",
    "   0.5s openai        CLOSED -> OPEN      tripped by rate_limit, HTTP 429, Retry-After 1.2s",
    "   0.7s github           new -> OPEN      tripped by 5 consecutive failures",
    "   1.8s openai          OPEN -> HALF_OPEN cooldown over: one probe may go",
    "   1.9s openai     HALF_OPEN -> CLOSED    the probe succeeded: serving again",
    "   2.0s github          OPEN -> HALF_OPEN cooldown over: one probe may go",
    "   2.1s github     HALF_OPEN -> OPEN      the probe failed (connection)",
    "   3.0s github          OPEN -> HALF_OPEN cooldown over: one probe may go",
    "   3.2s github     HALF_OPEN -> CLOSED    the probe succeeded: serving again",
]
SUMMARY = [
    "2 providers, 2 breaker trips, 1 failed probes over 3.2s; every breaker CLOSED",
    "github: tripped 1x (5 consecutive failures), 1 failed probes, shut 2.5s, now CLOSED",
    "openai: tripped 1x (rate_limit, HTTP 429, Retry-After 1.2s), 0 failed probes, shut 1.4s, "
    "now CLOSED",
    "breaker cycles OPEN -> HALF_OPEN -> CLOSED: github 1, openai 1; "
    "the first completed 1.9s into the run",
]


def _snap(provider: str, snapshot: dict[str, Any], mono: float) -> ProviderState:
    return ProviderState(run_id="r", provider=provider, snapshot=snapshot, mono=mono)


OUTAGE = {
    "providers": {
        "alpha": {"sequence": [{"status": 429, "retry_after_s": 30}], "then": "ok"},
        "beta": {"sequence": [{"status": 429, "retry_after_s": 20}], "then": "ok"},
    }
}


async def test_the_closing_phase_probes_every_breaker_closed_on_the_injected_clock() -> None:
    """Both breakers trip on a Retry-After; once the outage is over, the closing phase waits
    out the cooldowns on the router's clock (advanced here, never slept) and probes each
    provider through its profile until every breaker is CLOSED."""
    clock = ManualClock()
    server = FaultServer(script=OUTAGE)
    await server.start()
    seen: list[ProviderState] = []
    try:
        names = sorted(OUTAGE["providers"])
        section = demo_router_config(server.base_url, names)
        section["profiles"] = {f"{PROBE_PROFILE}{n}": {"provider": n} for n in names}
        router = build_workbench_router(
            None, config=RouterConfig.model_validate(section), environ={}, clock=clock
        )
        router.subscribe(
            lambda s: seen.append(
                _snap(s.name, s.model_dump(mode="json"), clock.monotonic() - 1_000.0)
            )
        )
        try:
            for name in names:
                with contextlib.suppress(NoHandlerError):  # every provider failed, as scripted
                    await router.complete(probe_request(name))
            states = {s.name: s.state.value for s in router.snapshot()}
            assert [states[name] for name in names] == ["OPEN", "OPEN"], states
            server.set_script({"providers": {name: {} for name in names}})

            async def wait_out(seconds: float) -> None:
                """Time passes in 5 s steps; each step lets the breakers' wake-ups run."""
                target = clock.monotonic() + seconds
                while clock.monotonic() < target:
                    clock.advance(min(5.0, target - clock.monotonic()))
                    for _ in range(3):  # the woken task, its breaker read, its event
                        await asyncio.sleep(0)

            assert await close_every_breaker(router, wait=wait_out) == []
            assert all(s.state.value == "CLOSED" for s in router.snapshot())
        finally:
            await router.aclose(flush=False)
    finally:
        await server.stop()
    story = BreakerStory()
    lines = "\n".join(story.fold(seen))
    assert lines.splitlines() == [
        "   0.0s alpha            new -> OPEN      tripped by rate_limit, HTTP 429, Retry-After 30s",
        "   0.0s beta             new -> OPEN      tripped by rate_limit, HTTP 429, Retry-After 20s",
        "  20.0s beta            OPEN -> HALF_OPEN cooldown over: one probe may go",
        "  30.0s alpha           OPEN -> HALF_OPEN cooldown over: one probe may go",
        "  30.0s alpha      HALF_OPEN -> CLOSED    the probe succeeded: serving again",
        "  30.0s beta       HALF_OPEN -> CLOSED    the probe succeeded: serving again",
    ], "each breaker waited out exactly its Retry-After on the injected clock"
    assert story.summary_lines()[0].endswith("every breaker CLOSED")


def test_provider_columns_keep_their_places_while_breakers_change() -> None:
    """The panel's columns do not move as states, cooldowns and latencies change."""

    def header_at(states: dict[str, dict[str, Any]]) -> str:
        view = RunView()
        view.apply_all(
            [
                ProviderState(run_id="r", provider=name, snapshot=snapshot(name, **fields))
                for name, fields in states.items()
            ]
        )
        console = Console(width=110)
        with console.capture() as capture:
            console.print(providers_table(view, now=view.last_ts))
        return capture.get().splitlines()[0]

    calm = header_at({"openai": {"state": "CLOSED"}, "gemini": {"state": "CLOSED"}})
    stormy = header_at(
        {
            "openai": {"state": "HALF_OPEN", "cooldown_remaining_s": 3599.0},
            "gemini": {
                "state": "OPEN",
                "cooldown_remaining_s": 1.5,
                "p50_latency_s": 12.5,
                "p95_latency_s": 40.0,
                "in_flight": 12,
                "bulkhead_size": 16,
                "success_rate": 1.0,
            },
        }
    )
    assert calm == stormy
