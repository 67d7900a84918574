"""`workbench demo chaos`: a research run against providers scripted to fail and recover.

The loopback fault server plays router/fault/scripts/chaos.yaml, time-scaled so that
a 30 s cooldown takes 1.5 s at the default 0.05, and answers with the built-in
extractive model over real HTTP. The router is pointed at one provider per
scripted prefix with its cooldowns scaled by the same factor, and the
deep-research workflow runs against them, so breakers trip, cool down, probe
and close while the providers panel shows it. The server lives on the run's
worker loop and stops with the run.

The demo's router keeps its statistics in memory: its providers carry real
providers' names (openai, anthropic, …), and their scripted outages must not
land in the workspace's provider statistics that `workbench providers` and
later runs read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised, Log, ProviderState, RunEvent
from engine.protocol import ExecutionResult, InterruptResponder
from engine.store import new_run_id
from router.fault.script import DEFAULT_SCRIPT_PATH
from tui.app.run_state import describe
from tui.config import WorkbenchConfig
from tui.echo import echo
from tui.launch.parts import RunParts
from tui.launch.run import open_run
from tui.launch.run_driver import EventInbox, NewRunJob
from tui.launch.steps import load_workflow_file
from tui.launch.workbench import SHIPPED_WORKFLOWS, make_workbench
from tui.launch.workspace import Workspace
from tui.present.breaker_story import error_note, why
from tui.present.console import SafeConsole
from tui.present.progress import ProgressBoard, RunProgress

if TYPE_CHECKING:
    from router.clock import Clock
    from router.models import ChatRequest, ProviderSnapshot
    from router.router import SmartModelRouter

CHAOS_SCRIPT = DEFAULT_SCRIPT_PATH
WORKFLOW = SHIPPED_WORKFLOWS / "deep_research.yaml"
CYCLE = ("OPEN", "HALF_OPEN", "CLOSED")


PROBE_PROFILE = "chaos-probe-"
"""The demo's router has one profile per provider, so the closing phase can probe each in turn."""
CLOSING_ROUNDS = 12
"""How many times the closing phase waits out the longest cooldown and probes before it gives up."""


def chaos_job(
    workspace: Path,
    *,
    time_scale: float,
    query: str,
    settings: WorkbenchConfig | None = None,
    clock: Clock | None = None,
) -> NewRunJob:
    """The demo's run as a job for the app's worker thread (or ``asyncio.run`` when headless).
    Like ``Workbench.new_run_job``, it is a ``NewRunJob``: its run id is chosen up front.

    Its phases: the research run against the scripted outages; then the outages end and every
    breaker that is not CLOSED is waited out and probed until it is (``clock``: the router's,
    injected by tests); then the summary, as log events of the run, so the app shows it and the
    stored run keeps it."""
    run_id = new_run_id()

    async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
        from engine.selector import select_engine
        from router.config import RouterConfig
        from router.fault.demo import demo_router_config
        from router.fault.server import FaultServer
        from tui.launch.wiring import build_workbench_router, extractive_responder

        server = FaultServer(
            script=CHAOS_SCRIPT, responder=extractive_responder(), time_scale=time_scale
        )
        await server.start()
        try:
            providers = sorted(server.script.providers)
            section = demo_router_config(server.base_url, providers, time_scale=time_scale)
            section["profiles"] = {
                f"{PROBE_PROFILE}{name}": {"provider": provider["name"]}
                for name, provider in zip(providers, section["providers"], strict=True)
            }
            config = RouterConfig.model_validate(section)
            definition = load_workflow_file(WORKFLOW, Workspace(workspace))
            selection = select_engine(definition)
            router = build_workbench_router(None, config=config, environ={}, clock=clock)
            try:
                async with open_run(
                    Workspace(workspace),
                    definition,
                    inputs={"query": query},
                    run_id=run_id,
                    engine_reason=f"{selection.reason}; chaos demo at time scale {time_scale:g}",
                    responder=responder,
                    surfaces=[inbox.put],
                    settings=settings,
                    parts=RunParts(router=router),
                ) as run:
                    result = await run.start()
                    store = run.context.store

                    def say(message: str) -> None:
                        store.append(Log(run_id=run_id, message=message))

                    say(
                        f"{DEMO_LOG}: the run is over and so are the scripted outages; "
                        "every breaker not CLOSED waits out its cooldown and is probed"
                    )
                    server.set_script({"providers": {name: {} for name in providers}})
                    await close_every_breaker(router)
                    story = BreakerStory()
                    story.fold(store.events(run_id))
                    for line in story.summary_lines():
                        say(f"{DEMO_LOG} summary: {line}")
                    return result
            finally:
                await router.aclose()
        finally:
            await server.stop()

    return NewRunJob(run_id, job)


def probe_request(provider: str) -> ChatRequest:
    """A small request that goes to ``provider`` first (its profile): a probe when it is HALF_OPEN."""
    from router.models import ChatMessage, ChatRequest

    return ChatRequest(
        task="chaos.probe",
        messages=[ChatMessage(role="user", content="Are you serving again?")],
        profile=f"{PROBE_PROFILE}{provider}",
    )


async def close_every_breaker(
    router: SmartModelRouter,
    rounds: int = CLOSING_ROUNDS,
    wait: Callable[[float], Awaitable[None]] | None = None,
) -> list[str]:
    """Wait out the longest cooldown, then send one request through each provider whose breaker
    is not CLOSED (its profile puts it first, so the request is its probe); repeat until every
    breaker is CLOSED. Returns the providers still not CLOSED after ``rounds`` tries.

    ``wait`` waits out a cooldown (default: the router's clock); a test hands in one that
    advances its manual clock, so no probe is ever in flight while time jumps."""
    from router.models import BreakerState

    wait = wait or router.clock.sleep

    def waiting() -> list[ProviderSnapshot]:
        return [s for s in router.snapshot() if s.state is not BreakerState.CLOSED]

    for _ in range(rounds):
        shut = waiting()
        if not shut:
            return []
        await wait(max(s.cooldown_remaining_s for s in shut))
        for snapshot in waiting():
            try:
                await router.complete(probe_request(snapshot.name))
            except Exception:  # noqa: BLE001 - a failed probe reopens its breaker; the next round retries
                continue
    return [s.name for s in waiting()]


async def approve_automatically(
    event: InterruptRaised, request: InterruptRequest
) -> InterruptAnswer:
    """The headless demo's answer to every prompt: its default (approve the plan), marked automatic."""
    default = request.default or InterruptAnswer(action="approve")
    return default.model_copy(update={"automatic": True, "note": "demo chaos --headless"})


class BreakerWatch:
    """Follows ``provider_state`` events: which are state changes, and the full cycles they complete."""

    def __init__(self) -> None:
        self._state: dict[str, str] = {}
        self._progress: dict[str, int] = {}
        self.cycles: dict[str, int] = {}
        self.first_cycle_s: float | None = None

    def change(self, event: RunEvent) -> bool:
        """Fold ``event``; True when it moves a provider's breaker to another state."""
        if not isinstance(event, ProviderState):
            return False
        state = str(event.snapshot.get("state", ""))
        if self._state.get(event.provider) == state:
            return False
        self._state[event.provider] = state
        step = self._progress.get(event.provider, 0)
        if state == CYCLE[step]:
            step += 1
        elif state == "OPEN":
            step = 1  # a failed probe reopens: the cycle starts over
        if step == len(CYCLE):
            self.cycles[event.provider] = self.cycles.get(event.provider, 0) + 1
            if self.first_cycle_s is None:
                self.first_cycle_s = event.mono
            step = 0
        self._progress[event.provider] = step
        return True

    def summary(self) -> str:
        if not self.cycles:
            return "no breaker went OPEN -> HALF_OPEN -> CLOSED during this run"
        counts = ", ".join(f"{name} {count}" for name, count in sorted(self.cycles.items()))
        return (
            f"breaker cycles OPEN -> HALF_OPEN -> CLOSED: {counts}; "
            f"the first completed {self.first_cycle_s:.1f}s into the run"
        )


@dataclass
class ProviderStory:
    """One provider's breaker over the demo: its state, trips, failed probes, time shut."""

    state: str = ""
    trips: int = 0
    failed_probes: int = 0
    reopened_at: float | None = None
    shut_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    """The error notes its trips carried (class, HTTP status, Retry-After) and how often."""


class BreakerStory:
    """Every breaker transition of the demo with its reason, and the summary of them all."""

    def __init__(self) -> None:
        self.watch = BreakerWatch()
        self.providers: dict[str, ProviderStory] = {}
        self.last_mono = 0.0

    def fold(self, events: Iterable[RunEvent]) -> list[str]:
        """Fold ``events``; one line per breaker transition, saying why it happened."""
        lines: list[str] = []
        for event in events:
            self.last_mono = max(self.last_mono, event.mono)
            if not isinstance(event, ProviderState):
                continue
            story = self.providers.setdefault(event.provider, ProviderStory())
            previous = story.state or None
            if not self.watch.change(event):
                continue
            state = str(event.snapshot.get("state", ""))
            self._count(story, previous, state, event)
            reason = why(event.snapshot, previous)
            lines.append(
                f"{event.mono:6.1f}s {event.provider:<10} {previous or 'new':>9} -> "
                + (f"{state:<9} {reason}" if reason else state)
            )
        return lines

    def _count(
        self, story: ProviderStory, previous: str | None, state: str, event: ProviderState
    ) -> None:
        story.state = state
        if state == "OPEN":
            if previous == "HALF_OPEN":
                story.failed_probes += 1
            else:
                story.trips += 1
                note = error_note(event.snapshot) or str(event.snapshot.get("open_reason") or "")
                if note:
                    story.errors[note] = story.errors.get(note, 0) + 1
            if story.reopened_at is None:
                story.reopened_at = event.mono
        elif state == "CLOSED" and story.reopened_at is not None:
            story.shut_s += event.mono - story.reopened_at
            story.reopened_at = None

    def summary_lines(self) -> list[str]:
        """What happened, in one screen: the totals, then a line per provider that tripped."""
        shut = sorted(name for name, s in self.providers.items() if s.state != "CLOSED")
        trips = sum(s.trips for s in self.providers.values())
        lines = [
            f"{len(self.providers)} providers, {trips} breaker trips, "
            f"{sum(s.failed_probes for s in self.providers.values())} failed probes over "
            f"{self.last_mono:.1f}s; "
            + (f"not CLOSED at the end: {', '.join(shut)}" if shut else "every breaker CLOSED")
        ]
        for name, story in sorted(self.providers.items()):
            if not story.trips:
                continue
            errors = "; ".join(
                f"{note}" + (f" x{count}" if count > 1 else "")
                for note, count in story.errors.items()
            )
            lines.append(
                f"{name}: tripped {story.trips}x ({errors or 'failures'}), "
                f"{story.failed_probes} failed probes, shut {story.shut_s:.1f}s, now {story.state}"
            )
        lines.append(self.watch.summary())
        return lines


_PRINTED = ("run_started", "run_finished", "step_failed", "interrupt_resolved")
DEMO_LOG = "chaos demo"
"""The start of the demo's own log lines (its phases and summary)."""


class HeadlessDemo:
    """The headless demo's output: breaker transitions with their reasons, the run's milestones,
    the demo's phases and summary as lines; the run's steps and the breakers closed as bars."""

    def __init__(self, console: Console, board: ProgressBoard) -> None:
        self.console = console
        self.board = board
        self.story = BreakerStory()
        self.progress = RunProgress(board)
        self.closing = False

    def __call__(self, events: list[RunEvent]) -> None:
        self.progress(events)
        for event in events:
            lines = self.story.fold([event])
            if not lines and (
                event.kind in _PRINTED
                or (isinstance(event, Log) and event.message.startswith(DEMO_LOG))
            ):
                lines = [f"{event.mono:6.1f}s {describe(event)}"]
            for line in lines:
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)
            self.closing = self.closing or event.kind == "run_finished"
            if self.closing and isinstance(event, (ProviderState, Log)):
                self._show_closed()

    def _show_closed(self) -> None:
        providers = self.story.providers.values()
        closed = sum(story.state == "CLOSED" for story in providers)
        self.board.update("breakers", closed, len(providers), label="breakers CLOSED again")


def run_chaos_demo(
    workspace: str | Path | None, *, time_scale: float, query: str, headless: bool
) -> None:

    workbench = make_workbench(workspace)
    workbench.workspace.mkdir(parents=True, exist_ok=True)
    job = chaos_job(
        workbench.workspace, time_scale=time_scale, query=query, settings=workbench.config
    )
    if not headless:
        from tui.app.app import WorkbenchApp

        WorkbenchApp(workbench, run_job=job).run()
        return

    inbox = EventInbox()
    console = SafeConsole()

    async def main(show: HeadlessDemo) -> ExecutionResult:
        task = asyncio.create_task(job(approve_automatically, inbox))
        while not task.done():
            show(inbox.drain())
            await asyncio.sleep(0.1)
        show(inbox.drain())
        return task.result()

    with ProgressBoard(console) as board:
        result = asyncio.run(main(HeadlessDemo(console, board)))
    echo(f"run {result.run_id}: {result.status.value} {result.reason}".rstrip())
