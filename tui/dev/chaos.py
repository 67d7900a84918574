"""`workbench demo chaos`: a research run against providers scripted to fail and recover.

The loopback fault server plays router/scripts/chaos.yaml, time-scaled so that
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
from collections.abc import Iterable
from pathlib import Path

import click

from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised, ProviderState, RunEvent
from engine.protocol import ExecutionResult, InterruptResponder
from engine.store import new_run_id
from router.fault_script import DEFAULT_SCRIPT_PATH
from tui.app.run_driver import EventInbox, NewRunJob
from tui.app.run_state import describe
from tui.config import WorkbenchConfig
from tui.launch.run import RunParts, open_run
from tui.launch.steps import load_workflow_file
from tui.launch.workbench import SHIPPED_WORKFLOWS
from tui.launch.workspace import Workspace

CHAOS_SCRIPT = DEFAULT_SCRIPT_PATH
WORKFLOW = SHIPPED_WORKFLOWS / "deep_research.yaml"
CYCLE = ("OPEN", "HALF_OPEN", "CLOSED")


def chaos_job(
    workspace: Path, *, time_scale: float, query: str, settings: WorkbenchConfig | None = None
) -> NewRunJob:
    """The demo's run as a job for the app's worker thread (or ``asyncio.run`` when headless).
    Like ``Workbench.new_run_job``, it is a ``NewRunJob``: its run id is chosen up front."""
    run_id = new_run_id()

    async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
        from engine.selector import select_engine
        from router.config import RouterConfig
        from router.fault_server import FaultServer, demo_router_config
        from tui.launch.wiring import build_workbench_router, extractive_responder

        server = FaultServer(
            script=CHAOS_SCRIPT, responder=extractive_responder(), time_scale=time_scale
        )
        await server.start()
        try:
            config = RouterConfig.model_validate(
                demo_router_config(
                    server.base_url, sorted(server.script.providers), time_scale=time_scale
                )
            )
            definition = load_workflow_file(WORKFLOW, Workspace(workspace))
            selection = select_engine(definition)
            router = build_workbench_router(None, config=config, environ={})
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
                    return await run.start()
            finally:
                await router.aclose()
        finally:
            await server.stop()

    return NewRunJob(run_id, job)


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


_PRINTED = ("run_started", "run_finished", "step_failed", "interrupt_resolved")


def _print(events: Iterable[RunEvent], watch: BreakerWatch) -> None:
    for event in events:
        if watch.change(event) or event.kind in _PRINTED:
            click.echo(f"{event.mono:6.1f}s {describe(event)}")


def run_chaos_demo(
    workspace: str | Path | None, *, time_scale: float, query: str, headless: bool
) -> None:
    from tui.commands.app_cmds import make_workbench

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
    watch = BreakerWatch()

    async def main() -> ExecutionResult:
        task = asyncio.create_task(job(approve_automatically, inbox))
        while not task.done():
            _print(inbox.drain(), watch)
            await asyncio.sleep(0.1)
        _print(inbox.drain(), watch)
        return task.result()

    result = asyncio.run(main())
    click.echo(watch.summary())
    click.echo(f"run {result.run_id}: {result.status.value} {result.reason}".rstrip())
