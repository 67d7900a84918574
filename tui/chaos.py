"""`workbench demo chaos`: a research run against providers scripted to fail and recover.

The loopback fault server (router/scripts/chaos.yaml, time-scaled so cooldowns
take seconds) answers with the built-in extractive model over real HTTP; the
router is pointed at one provider per scripted prefix; the deep-research
workflow runs against them, so breakers trip, cool down, probe and close while
the providers panel shows it. The server lives on the run's worker loop and
stops with the run.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
import click

from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised, RunEvent
from engine.protocol import ExecutionResult, InterruptResponder
from tui.run_driver import EventInbox, RunJob
from tui.run_state import describe
from tui.workbench import SHIPPED_WORKFLOWS, _load

CHAOS_SCRIPT = Path(__file__).resolve().parent.parent / "router" / "scripts" / "chaos.yaml"
WORKFLOW = SHIPPED_WORKFLOWS / "deep_research.yaml"


def chaos_job(workspace: Path, *, time_scale: float, query: str) -> RunJob:
    async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
        from engine.selector import create_engine, select_engine
        from router.config import RouterConfig
        from router.fault_server import FaultServer, demo_router_config
        from tui.wiring import build_run_context, close_run_context, extractive_responder

        server = FaultServer(script=CHAOS_SCRIPT, responder=extractive_responder(), time_scale=time_scale)
        await server.start()
        try:
            prefixes = sorted(server.script.providers)
            config = RouterConfig.model_validate(demo_router_config(server.base_url, prefixes))
            definition = _load(WORKFLOW)
            context = build_run_context(workspace, inputs={"query": query}, responder=responder, config=config,
                                        environ={})
            selection = select_engine(definition)
            context.engine_reason = f"{selection.reason}; chaos demo at time scale {time_scale:g}"
            unsubscribe = context.store.subscribe(inbox.put)
            try:
                return await create_engine(selection.name).execute(definition, context)
            finally:
                unsubscribe()
                await close_run_context(context)
        finally:
            await server.stop()

    return job


async def _approve_automatically(event: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    default = request.default or InterruptAnswer(action="approve")
    return default.model_copy(update={"automatic": True, "note": "demo chaos --headless"})


def run_chaos_demo(workspace: str | Path | None, *, time_scale: float, query: str, headless: bool) -> None:
    from tui.commands.app_cmds import make_workbench

    workbench = make_workbench(workspace)
    workbench.workspace.mkdir(parents=True, exist_ok=True)
    job = chaos_job(workbench.workspace, time_scale=time_scale, query=query)
    if not headless:
        from tui.app import WorkbenchApp

        WorkbenchApp(workbench, run_job=job).run()
        return

    inbox = EventInbox()

    async def main() -> ExecutionResult:
        task = asyncio.create_task(job(_approve_automatically, inbox))
        while not task.done():
            _print(inbox.drain())
            await asyncio.sleep(0.1)
        _print(inbox.drain())
        return task.result()

    result = asyncio.run(main())
    click.echo(f"run {result.run_id}: {result.status.value} {result.reason}")


def _print(events: list[RunEvent]) -> None:
    for event in events:
        if event.kind in ("provider_state", "run_started", "run_finished", "step_failed", "interrupt_resolved"):
            click.echo(f"{event.seq:>5} {describe(event)}")
