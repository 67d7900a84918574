"""Reading, copying and forking stored runs: `workbench runs list|show|export|copy|history|fork`.

`runs fork` exits with the new run's status, as `workbench run` does (see run_cmds);
an unknown run id or step exits 2.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from engine.event_lines import summarize
from engine.protocol import ExecutionResult
from engine.selector import ENGINES, engine_available
from engine.store import RunReader
from engine.store.records import InterruptRecord, RunRecord, StepResult
from engine.time_travel import ForkError
from plumbing.collector import kept_from_collection
from tui.commands.command_context import ON_INTERRUPT, BadInput, workspace_of
from tui.commands.common import (
    attached_server,
    drive,
    interrupt_mode,
    open_store,
    read_store,
    responder_for,
)
from tui.echo import echo, echo_json, echo_json_text
from tui.exit_codes import FAILED
from tui.launch.fork import plan_fork
from tui.launch.fork_options import fork_edits
from tui.launch.run import Surface, open_run
from tui.present.console import SafeConsole
from tui.present.headless import step_table, styled


@click.group("runs")
def runs_group() -> None:
    """Read the run store: list, show, export; copy runs to another store."""


@runs_group.command("list")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option(
    "--json", "as_json", is_flag=True, help="Print the runs as one JSON array (for scripts)."
)
@click.pass_context
def runs_list(ctx: click.Context, limit: int, as_json: bool) -> None:
    """The most recent runs, newest first."""
    from rich.table import Table

    with read_store(ctx) as store:
        runs = store.list_runs(limit)
    if as_json:
        echo_json([run.model_dump(mode="json") for run in runs])
        return
    console = SafeConsole()
    if not runs:
        console.print("no runs yet: try workbench run workflows/fan_out.yaml --headless")
        return
    # The run id is what a person copies into resume or runs show: it never wraps nor shrinks;
    # the other columns are cut first (the reason wraps), and --json gives everything to scripts.
    table = Table(title="runs", caption="every field: workbench runs list --json")
    table.add_column("run", no_wrap=True, min_width=max(len(run.run_id) for run in runs))
    for column in ("workflow", "status", "engine", "started"):
        table.add_column(column, no_wrap=True, overflow="ellipsis")
    table.add_column("reason", overflow="fold", ratio=1)
    from datetime import datetime

    for run in runs:
        started = datetime.fromtimestamp(run.created_ts).strftime("%Y-%m-%d %H:%M:%S")
        status = (
            styled(run.status.value)
            if run.status_label() == run.status.value
            else f"[yellow]{escape(run.status_label())}[/]"
        )
        table.add_row(run.run_id, run.workflow, status, run.engine, started, escape(run.reason))
    console.print(table)


def _get_run(store: RunReader, run_id: str) -> Any:
    try:
        return store.get_run(run_id)
    except LookupError as error:  # no such run here, or on the server
        raise BadInput(f"{error.args[0]}; see workbench runs list") from None


def run_document(
    record: RunRecord, results: dict[str, StepResult], pending: list[InterruptRecord]
) -> dict[str, Any]:
    """`runs show --json`: the run record's fields (without its definition and engine-private
    state), ``stopped``, ``steps`` in the workflow's order, then any steps the definition does
    not name (grown agent nodes), and the ``pending`` prompts."""
    document = record.model_dump(mode="json", exclude={"definition", "engine_state"})
    document["stopped"] = record.stopped
    order = [s for s in record.definition.step_ids if s in results]
    order += [s for s in results if s not in order]
    document["steps"] = [results[step].model_dump(mode="json") for step in order]
    document["pending"] = [interrupt.model_dump(mode="json") for interrupt in pending]
    return document


@runs_group.command("show")
@click.argument("run_id")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the run as one JSON object (for scripts)."
)
@click.pass_context
def runs_show(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """One run: status, engine and why, inputs, outputs, every step, pending prompts."""
    with read_store(ctx) as store:
        record = _get_run(store, run_id)
        results = store.step_results(run_id)
        pending = store.pending_interrupts(run_id)
    if as_json:
        echo_json(run_document(record, results, pending))
        return
    console = SafeConsole()
    from tui.client.http import server_url

    server = attached_server(ctx)
    # the commands shown name the server the run is on: without it they look in this workspace
    workbench = f"workbench --server {server_url(server)}" if server else "workbench"
    console.print(
        f"[bold]run {record.run_id}[/]: {escape(record.workflow)} {styled(record.status.value)}"
        + (f" — {escape(record.reason)}" if record.reason else ""),
        highlight=False,
    )
    if record.stopped:
        console.print(
            f"[yellow]stopped: the process that ran it is gone"
            f"{' (' + record.owner.describe() + ')' if record.owner else ''}"
            f" — continue it with {escape(workbench)} resume {record.run_id}[/]",
            highlight=False,
        )
    elif record.owner is not None:
        state = (
            "running"
            if record.owner_status == "alive"
            else "on another host: cannot check whether it runs"
        )
        console.print(f"owner: {record.owner.describe()} ({state})", highlight=False)
    console.print(f"engine: {record.engine} ({escape(record.engine_reason)})", highlight=False)
    console.print(f"source: {escape(record.source)}", highlight=False)
    if record.parent_run_id:
        console.print(f"forked from {record.parent_run_id} at {record.forked_at}", highlight=False)
    console.print(f"inputs: {escape(summarize(record.inputs, 300))}", highlight=False)
    if record.outputs:
        console.print(f"outputs: {escape(summarize(record.outputs, 300))}", highlight=False)
    console.print(step_table(results, record.definition.step_ids))
    for interrupt in pending:
        console.print(
            f"[yellow]waiting: {interrupt.step_id} asks {escape(interrupt.request.prompt)}[/] "
            f"[dim]({interrupt.interrupt_id})[/] — answer with: {escape(workbench)} resume {run_id} "
            f"--answer {'approve' if len(pending) == 1 else f'{interrupt.step_id}=approve'}",
            highlight=False,
        )


@runs_group.command("export")
@click.argument("run_id")
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file instead of standard output.",
)
@click.pass_context
def runs_export(ctx: click.Context, run_id: str, fmt: str, output: str | None) -> None:
    """Every event of a run, one JSON object per line, in seq order."""
    with read_store(ctx) as store:
        _get_run(store, run_id)
        lines = [event.model_dump_json() for event in store.events(run_id)]
    text = "".join(line + "\n" for line in lines)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        echo_json_text(text, nl=False)


@runs_group.command("copy")
@click.option(
    "--from",
    "source",
    metavar="STORE",
    help="A workspace folder or a PostgreSQL address (default: the store this command reads).",
)
@click.option(
    "--to",
    "target",
    metavar="STORE",
    required=True,
    help="A workspace folder or a PostgreSQL address (its password from PGPASSWORD).",
)
@click.argument("run_ids", nargs=-1)
@click.pass_context
def runs_copy(
    ctx: click.Context, source: str | None, target: str, run_ids: tuple[str, ...]
) -> None:
    """Copy runs (every run, or those named) between a workspace and a PostgreSQL store.

    Each run is copied whole, in one transaction. A run the target already holds is left alone:
    unchanged, it is reported as present; otherwise as differing, and the command exits 1.
    """
    from engine.store.copy import copy_runs
    from tui.commands.common import store_location
    from tui.launch.stores import describe_location, open_run_store

    where_from = describe_location(source) if source else store_location(ctx)
    where_to = describe_location(target)
    if where_from == where_to:
        raise BadInput(f"--to names the store the runs are copied from ({where_to})")
    if source and not _is_store(source):
        raise BadInput(f"--from: no run store at {where_from}")
    counts = {"copied": 0, "present": 0, "differs": 0}
    with open_store(ctx) if source is None else open_run_store(source) as origin:
        with open_run_store(target) as destination:
            for copied in copy_runs(origin, destination, run_ids):
                counts[copied.outcome] += 1
                echo(
                    {
                        "copied": f"copied  {copied.run_id} ({copied.events} events)",
                        "present": f"present {copied.run_id} (already there, unchanged)",
                        "differs": f"differs {copied.run_id}: the target holds it otherwise;"
                        " left as it is on both sides",
                    }[copied.outcome]
                )
    echo(
        f"{counts['copied']} copied, {counts['present']} already there, {counts['differs']}"
        f" differing — from {where_from} to {where_to}"
    )
    if counts["differs"]:
        ctx.exit(FAILED)


def _is_store(location: str) -> bool:
    """Whether ``location`` names an existing store (a database is checked when opened)."""
    from plumbing.postgres import is_database_address
    from plumbing.workspace import Workspace as Folder

    return is_database_address(location) or Folder(Path(location).expanduser()).runs_db.is_file()


# -- history and fork (the LangGraph issue) ----------------------------------------------


@runs_group.command("history")
@click.argument("run_id")
@click.pass_context
def runs_history(ctx: click.Context, run_id: str) -> None:
    """The checkpoints of a run: LangGraph's supersteps, or a Kahn run's stored step transitions."""
    from rich.table import Table

    # Imported here: LangGraph is slow to import and only history needs it.
    from engine.langgraph_engine import LangGraphEngine

    with open_store(ctx) as store:
        record = _get_run(store, run_id)
        engine = LangGraphEngine()  # its checkpoints file is found next to the store
        entries = asyncio.run(engine.history(run_id, store))
    table = Table(title=f"checkpoints of {run_id} ({record.engine})")
    for column in ("#", "checkpoint", "superstep", "source", "changed", "settled"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        changed = ", ".join(f"{step}={status}" for step, status in entry.changed.items())
        table.add_row(
            str(entry.index),
            entry.checkpoint_id,
            "" if entry.superstep is None else str(entry.superstep),
            entry.source,
            escape(changed),
            str(len(entry.settled)),
        )
    SafeConsole().print(table)


@runs_group.command("fork")
@click.argument("run_id")
@click.option(
    "--at",
    "at_step",
    required=True,
    metavar="STEP[@ITERATION]",
    help="Go back to just before STEP's pass ITERATION (default 0) and run on from there.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="STEP.FIELD=VALUE",
    help="Change a restored step output (VALUE as JSON, else text); repeatable.",
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=VALUE",
    help="Change a run input for the fork; repeatable.",
)
@click.option(
    "--engine",
    type=click.Choice(["same", *ENGINES]),
    default="same",
    show_default=True,
    help="Which engine runs the fork (same: the one that ran RUN_ID).",
)
@click.option(
    "--on-interrupt", type=ON_INTERRUPT, default=None, help="Who answers prompts (as for run)."
)
@click.pass_context
def runs_fork(
    ctx: click.Context,
    run_id: str,
    at_step: str,
    sets: tuple[str, ...],
    inputs: tuple[str, ...],
    engine: str,
    on_interrupt: str | None,
) -> None:
    """Time travel: a new run from RUN_ID as it was just before STEP's pass began."""
    from tui.commands.common import attached_server

    server = attached_server(ctx)
    if server is not None:
        from tui.commands.run_cmds import server_fork

        body = {"at": at_step, "sets": list(sets), "inputs": list(inputs), "engine": engine}
        ctx.exit(server_fork(server, run_id, body, on_interrupt))
    with open_store(ctx) as store:
        _get_run(store, run_id)
        try:
            plan = plan_fork(store, workspace_of(ctx), run_id, at_step, fork_edits(sets, inputs))
        except ForkError as error:
            raise BadInput(str(error)) from None
        name = plan.source.engine if engine == "same" else engine
        if not engine_available(name):
            raise BadInput(f"the {name} engine is not installed here")
        ctx.call_on_close(kept_from_collection())  # the source run's definition and records
        console = SafeConsole()

        async def run(printer: Surface) -> ExecutionResult:
            async with open_run(
                workspace_of(ctx),
                plan.source.definition,
                inputs=plan.inputs,
                run_id=plan.run_id,
                engine=name,
                engine_reason=plan.reason,
                responder=responder_for(interrupt_mode(on_interrupt), console),
                surfaces=[printer],
                store=store,
            ) as opened:
                return await opened.fork(run_id, at_step, plan.edits)

        code = drive(store, plan.run_id, run, console)
    ctx.exit(code)


COMMANDS: list[click.Command] = [runs_group]
