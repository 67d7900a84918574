"""Running workflows: `workbench run`, `validate`, `resume`.

Exit codes of `run` and `resume` (the run's status): 0 COMPLETED, 1 FAILED,
2 bad input (unknown file, YAML problems, a bad --input, an unknown run id),
3 PARTIAL, 4 WAITING (an interrupt waits for an answer: `workbench resume`),
5 CANCELLED, 6 the engines differ (`run --engine shadow`). `validate` exits 0 when the file is valid, 1 when it has
problems, 2 when it cannot be read.

`validate` imports only what checking a file needs; `run` and `resume` import the run machinery
(the store, the engines, the live printer) when they run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import click

from engine.graph import WorkflowGraph
from engine.selector import ENGINES, engine_available, select_engine
from plumbing.collector import kept_from_collection
from tui.commands.command_context import ON_INTERRUPT, BadInput, load_or_exit, workspace_of
from tui.echo import echo
from tui.exit_codes import BAD_INPUT, SHADOW_DIFFERS
from tui.root_options import WORKSPACE_KEY

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from rich.console import Console

    from engine.context import InterruptRequest
    from engine.events import InterruptRaised
    from engine.protocol import ExecutionResult
    from engine.spec import WorkflowDefinition
    from engine.store import BaseRunStore
    from tui.launch.run import Surface
    from tui.launch.run_driver import RunJob

PRINT_EVERY_S = 0.05
"""How often a run followed on a server prints what arrived (as the app's timer drains it)."""


@click.command("run")
@click.argument("workflow_file", type=click.Path(dir_okay=False))
@click.option(
    "--input",
    "-i",
    "input_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="A workflow input (repeatable).",
)
@click.option("--headless", is_flag=True, help="Print progress here instead of opening the app.")
@click.option(
    "--engine",
    type=click.Choice(["auto", *ENGINES, "shadow"]),
    default="auto",
    show_default=True,
    help="Which engine runs it; auto picks by the workflow's shape; shadow runs both and compares "
    "them (exit 6 on any difference).",
)
@click.option(
    "--on-interrupt",
    type=ON_INTERRUPT,
    default=None,
    help="Who answers prompts: default (approve / default edge, recorded as automatic), wait (store the "
    "run WAITING), ask (on this terminal). Default: ask on a terminal, else wait.",
)
@click.pass_context
def run_command(
    ctx: click.Context,
    workflow_file: str,
    input_pairs: tuple[str, ...],
    headless: bool,
    engine: str,
    on_interrupt: str | None,
) -> None:
    """Run a workflow file and show its progress live."""
    from engine.run_inputs import InputError, parse_assignments, resolve_inputs

    wf = load_or_exit(ctx, workflow_file, BAD_INPUT)
    ctx.call_on_close(kept_from_collection())  # the workflow, the modules: kept until the end
    try:
        inputs = resolve_inputs(wf, parse_assignments(list(input_pairs)))
    except InputError as error:
        raise BadInput(str(error)) from None
    from tui.commands.common import attached_server

    server = attached_server(ctx)
    if server is not None and engine == "shadow":
        raise BadInput(
            f"--server {server}: a server runs each workflow on one engine; --engine shadow"
            " runs on this machine only (leave out --server)"
        )
    if server is not None and headless:
        ctx.exit(_server_run(server, Path(workflow_file), inputs, engine, on_interrupt))
    if engine == "shadow":
        ctx.exit(_shadow_run(ctx, wf, inputs, on_interrupt))
    if not headless:  # attached to a server, the app's new run is started and followed there
        from tui.commands.app_cmds import open_app

        open_app(
            (ctx.obj or {}).get(WORKSPACE_KEY),
            workflow=Path(workflow_file),
            inputs=inputs,
            engine=None if engine == "auto" else engine,
        )
        return
    from engine.store import new_run_id
    from tui.commands.common import drive, interrupt_mode, open_store, responder_for
    from tui.launch.run import open_run
    from tui.present.console import SafeConsole

    console = SafeConsole()
    run_id = new_run_id()

    async def run(printer: Surface) -> ExecutionResult:
        async with open_run(
            workspace_of(ctx),
            wf,
            inputs=inputs,
            run_id=run_id,
            engine=engine,
            responder=responder_for(interrupt_mode(on_interrupt), console),
            surfaces=[printer],
            store=store,
        ) as opened:
            return await opened.start()

    with open_store(ctx) as store:
        code = drive(store, run_id, run, console)
    ctx.exit(code)


def _server_run(
    server: str, path: Path, inputs: dict[str, Any], engine: str, on_interrupt: str | None
) -> int:
    """Send the workflow file to the server as a new run and follow it here, printed as a
    local headless run is; prompts answered as ``--on-interrupt`` says. A run left waiting for
    an answer exits 4, as locally."""
    from engine.store import new_run_id
    from tui.client.http import ServerClient
    from tui.client.remote_store import RemoteRunStore
    from tui.commands.common import drive
    from tui.launch.server_runs import start_job
    from tui.present.console import SafeConsole

    console = SafeConsole()
    client = ServerClient(server)
    run_id = new_run_id()
    job = start_job(
        client, path, inputs, None if engine == "auto" else engine, run_id, leave_waiting=True
    )
    with RemoteRunStore(client) as store:
        return drive(
            store, run_id, _printed(job, on_interrupt, console), console, server=client.url
        )


def _server_resume(
    server: str, run_id: str, answers: tuple[str, ...], on_interrupt: str | None
) -> int:
    """Ask the server to queue the run again with ``answers`` (addressed here as locally) and
    follow it here from its last stored event, as :func:`_server_run` follows a new run."""
    from tui.client.http import ServerClient
    from tui.client.remote_store import RemoteRunStore
    from tui.commands.answer_options import answers_for
    from tui.commands.common import drive
    from tui.launch.server_runs import follow_job
    from tui.present.console import SafeConsole

    console = SafeConsole()
    client = ServerClient(server)
    with RemoteRunStore(client) as store:
        store.get_run(run_id)  # no such run: the server's one line
        pending = store.pending_interrupts(run_id)
        addressed = answers_for(pending, answers) if answers and pending else {}
        shown = max((event.seq for event in store.events(run_id)), default=0)

        def start() -> object:
            body = {key: answer.model_dump(mode="json") for key, answer in addressed.items()}
            return client.post(f"/v1/runs/{quote(run_id, safe='')}/resume", {"answers": body})

        job = follow_job(client, run_id, shown, start=start, leave_waiting=True)
        return drive(
            store, run_id, _printed(job, on_interrupt, console), console, server=client.url
        )


def server_fork(
    server: str,
    run_id: str,
    body: dict[str, Any],
    on_interrupt: str | None,
) -> int:
    """Ask the server to fork ``run_id`` (``body``: the fork route's request, less the new
    id) and follow the new run here from its first event, as :func:`_server_run` does."""
    from engine.store import new_run_id
    from tui.client.http import ServerClient
    from tui.client.remote_store import RemoteRunStore
    from tui.commands.common import drive
    from tui.launch.server_runs import follow_job
    from tui.present.console import SafeConsole

    console = SafeConsole()
    client = ServerClient(server)
    forked = new_run_id()

    def start() -> object:
        path = f"/v1/runs/{quote(run_id, safe='')}/fork"
        return client.post(path, {**body, "run_id": forked})

    job = follow_job(client, forked, start=start, leave_waiting=True)
    with RemoteRunStore(client) as store:
        store.get_run(run_id)  # no such run: the server's one line
        return drive(
            store, forked, _printed(job, on_interrupt, console), console, server=client.url
        )


def _printed(
    job: RunJob, on_interrupt: str | None, console: Console
) -> Callable[[Surface], Coroutine[Any, Any, ExecutionResult]]:
    """``job`` (a run followed on a server) with its events handed to the printer as they
    arrive and its prompts answered as ``--on-interrupt`` says."""
    from tui.commands.common import interrupt_mode, responder_for
    from tui.launch.run_driver import EventInbox

    answers = responder_for(interrupt_mode(on_interrupt), console) or _nobody_answers

    async def run(printer: Surface) -> ExecutionResult:
        import asyncio  # here: `validate` shares this module and must not load the run machinery

        inbox = EventInbox()
        following = asyncio.create_task(job(answers, inbox))
        while not following.done():
            await asyncio.wait({following}, timeout=PRINT_EVERY_S)
            printer(inbox.drain())
        return following.result()

    return run


async def _nobody_answers(event: InterruptRaised, request: InterruptRequest) -> None:
    """``--on-interrupt wait``: no answer from here; the run waits on the server."""
    return None


def _shadow_run(
    ctx: click.Context, wf: WorkflowDefinition, inputs: dict[str, Any], on_interrupt: str | None
) -> int:
    """Both engines on the same inputs, the second replaying the first's journal; the difference report."""
    import asyncio

    from rich.markup import escape

    from engine.shadow import ShadowResult, run_shadow
    from research.events import describe_research_event
    from tui.commands.common import EXIT_CODES, interrupt_mode, open_store, responder_for
    from tui.launch.run import open_run
    from tui.present.console import SafeConsole
    from tui.present.headless import HeadlessPrinter

    first = select_engine(wf, "auto")
    console = SafeConsole()

    async def go(store: BaseRunStore) -> ShadowResult:
        async with open_run(
            workspace_of(ctx),
            wf,
            inputs=inputs,
            engine=first.name,
            engine_reason=f"shadow, {first.name} first ({first.reason})",
            responder=responder_for(interrupt_mode(on_interrupt), console),
            store=store,
        ) as opened:
            return await run_shadow(wf, opened.context, first.name)

    with open_store(ctx) as store:
        # printed from the store, not as the run's surface: the second engine's run has its own id
        unsubscribe = store.subscribe(HeadlessPrinter(console, domain=describe_research_event))
        try:
            result = asyncio.run(go(store))
        finally:
            unsubscribe()
    console.print(escape(result.report.render()), highlight=False)
    if result.second is None:
        console.print(f"[yellow]{escape(result.note)}[/]", highlight=False)
        return EXIT_CODES[result.first.status]
    if not result.report.identical:
        return SHADOW_DIFFERS
    return EXIT_CODES[result.first.status]


@click.command("validate")
@click.argument("workflow_file", type=click.Path(dir_okay=False))
@click.pass_context
def validate_command(ctx: click.Context, workflow_file: str) -> None:
    """Check a workflow file: every problem as file:line:col: message, or ok with a summary."""
    wf = load_or_exit(ctx, workflow_file, 1)
    graph = WorkflowGraph.of(wf)
    nodes, edges = graph.nodes_and_edges()
    selection = select_engine(wf)
    echo(
        f"ok: {wf.name}: {len(nodes)} steps, {len(edges)} edges; "
        f"engine {selection.name} ({selection.reason})"
    )


@click.command("resume")
@click.argument("run_id")
@click.option(
    "--answer",
    "answers",
    multiple=True,
    metavar="[STEP=]ANSWER",
    help="Answer a waiting prompt: approve, reject, a routing TARGET, or JSON (edited outputs). "
    "When several wait, address each: STEP=ANSWER or INTERRUPT_ID=ANSWER (repeatable).",
)
@click.option(
    "--on-interrupt", type=ON_INTERRUPT, default=None, help="Who answers new prompts (as for run)."
)
@click.pass_context
def resume_command(
    ctx: click.Context, run_id: str, answers: tuple[str, ...], on_interrupt: str | None
) -> None:
    """Continue a run that was killed or is WAITING, without re-running finished steps."""
    from rich.markup import escape

    from tui.commands.common import attached_server

    server = attached_server(ctx)
    if server is not None:
        ctx.exit(_server_resume(server, run_id, answers, on_interrupt))

    from engine.lifecycle import resume_refusal
    from engine.store import RunOwned, UnknownRun
    from tui.commands.answer_options import answers_for
    from tui.commands.common import (
        drive,
        interrupt_mode,
        open_store,
        responder_for,
    )
    from tui.launch.run import open_run
    from tui.launch.steps import register_steps
    from tui.present.console import SafeConsole

    register_steps(workspace_of(ctx))
    with open_store(ctx) as store:
        try:
            record = store.get_run(run_id)
        except UnknownRun as error:
            raise BadInput(f"{error.args[0]}; see workbench runs list") from None
        if record.status.final:
            raise BadInput(
                f"run {run_id} is {record.status.value}; only a RUNNING or WAITING run resumes"
            )
        refusal = resume_refusal(record)
        if refusal:
            raise BadInput(refusal)
        if not engine_available(record.engine):
            raise BadInput(f"run {run_id} ran on {record.engine}, which is not installed here")
        ctx.call_on_close(kept_from_collection())  # the run's definition: kept until the end
        console = SafeConsole()
        if record.owner_status == "unknown" and record.owner is not None:
            console.print(
                f"[yellow]run {run_id} was started on {escape(record.owner.host)}; whether it still "
                "runs there cannot be checked from here — resuming[/]",
                highlight=False,
            )
        if answers:
            pending = store.pending_interrupts(run_id)
            addressed = answers_for(pending, answers) if pending else {}
            if not pending:
                console.print("[dim]nothing waits for an answer; resuming[/]")
            # Claim the run and record the answers in one transaction: of two resumes with
            # different answers, only the one that owns the run stores its answers.
            try:
                store.claim_owner(run_id, addressed)
            except RunOwned as error:
                raise BadInput(str(error)) from None

        async def run(printer: Surface) -> ExecutionResult:
            async with open_run(
                workspace_of(ctx),
                record.definition,
                inputs=record.inputs,
                run_id=run_id,
                engine=record.engine,
                engine_reason=record.engine_reason,
                responder=responder_for(interrupt_mode(on_interrupt), console),
                surfaces=[printer],
                store=store,
            ) as opened:
                return await opened.resume()

        code = drive(store, run_id, run, console)
    ctx.exit(code)


COMMANDS: list[click.Command] = [run_command, validate_command, resume_command]
