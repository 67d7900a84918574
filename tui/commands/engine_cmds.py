"""The engine's commands: `workbench run`, `validate`, `runs list|show|export`, `resume`.

Exit codes of `run` and `resume` (the run's status): 0 COMPLETED, 1 FAILED,
2 bad input (unknown file, YAML problems, a bad --input, an unknown run id),
3 PARTIAL, 4 WAITING (an interrupt waits for an answer: `workbench resume`),
5 CANCELLED, 6 the engines differ (`run --engine shadow`). `validate` exits 0 when the file is valid, 1 when it has
problems, 2 when it cannot be read.
"""
from __future__ import annotations

import asyncio
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import click
from platformdirs import user_data_dir
from rich.console import Console
from rich.markup import escape

from engine.context import InterruptAnswer, InterruptRequest
from engine.errors import WorkflowLoadError
from engine.events import InterruptRaised
from engine.graph import WorkflowGraph
from engine.headless import HeadlessPrinter, step_table, styled, summarize
from engine.loader import load_workflow
from engine.protocol import ExecutionResult, InterruptResponder, RunContext
from engine.run_inputs import InputError, parse_assignments, resolve_inputs
from engine.selector import ENGINES, create_engine, engine_available, select_engine
from engine.spec import WorkflowDefinition
from engine.states import RunStatus
from engine.store import RunStore, UnknownRun, new_run_id

RUNS_FILE = "runs.sqlite"
BAD_INPUT = 2
EXIT_CODES: dict[RunStatus, int] = {
    RunStatus.COMPLETED: 0,
    RunStatus.FAILED: 1,
    RunStatus.PARTIAL: 3,
    RunStatus.WAITING: 4,
    RunStatus.CANCELLED: 5,
}
STEP_MODULES = ("engine.demo_steps", "research.steps")
"""Modules whose import registers step implementations (a missing one is skipped)."""
BUILTIN_STEP_PREFIX = "demo."


class BadInput(click.ClickException):
    """One clear line on stderr and exit code 2, never a traceback."""

    exit_code = BAD_INPUT

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


def register_steps() -> None:
    for module in STEP_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module:
                raise


def workspace_path(ctx: click.Context) -> Path:
    configured = (ctx.obj or {}).get("workspace")
    path = Path(configured).expanduser() if configured else Path(user_data_dir("research-workbench"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def open_store(ctx: click.Context) -> RunStore:
    return RunStore(workspace_path(ctx) / RUNS_FILE)


def load_or_exit(path: str, exit_code: int) -> WorkflowDefinition:
    """The loaded workflow; otherwise every problem as file:line:col: message, then exit."""
    if not Path(path).is_file():
        raise BadInput(f"{path}: no such workflow file")
    register_steps()
    try:
        return load_workflow(path)
    except WorkflowLoadError as error:
        for problem in error.problems:
            click.echo(str(problem), err=True)
        sys.exit(exit_code)


# -- answers and responders ---------------------------------------------------------

def parse_answer(text: str) -> InterruptAnswer:
    """An answer as typed: approve / reject, a routing TARGET, or JSON (edited outputs or a full answer)."""
    stripped = text.strip()
    lowered = stripped.lower()
    if lowered in ("approve", "yes", "y", "ok"):
        return InterruptAnswer(action="approve")
    if lowered in ("reject", "no", "n"):
        return InterruptAnswer(action="reject")
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise BadInput(f"--answer is not valid JSON: {error.msg} at column {error.colno}") from None
        if "action" in data:
            try:
                return InterruptAnswer.model_validate(data)
            except ValueError as error:
                raise BadInput(f"--answer is not an answer: {str(error).splitlines()[0]}") from None
        return InterruptAnswer(action="edit", value=data)
    if stripped.isidentifier():
        return InterruptAnswer(action="choose", value=stripped)
    return InterruptAnswer(action="answer", value=stripped)


async def default_responder(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    """`--on-interrupt default`: approve, or the request's own default (a tie-breaker's default edge)."""
    answer = request.default or InterruptAnswer(action="approve", note="default answer")
    return answer.model_copy(update={"automatic": True})


def terminal_responder(console: Console) -> InterruptResponder:
    """`--on-interrupt ask`: ask on the terminal; only the asking step waits meanwhile."""
    lock = asyncio.Lock()

    async def respond(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer | None:
        async with lock:
            console.print(f"[bold yellow]? {raised.step_id}: {escape(request.prompt)}[/]")
            if request.payload:
                console.print(f"  [dim]{escape(summarize(request.payload, 200))}[/]")
            options = " / ".join(request.options) or "approve / reject"
            try:
                text = await asyncio.to_thread(click.prompt, f"  answer ({options})", default="approve")
            except (click.Abort, EOFError):
                return None
            return parse_answer(text)

    return respond


def responder_for(mode: str, console: Console) -> InterruptResponder | None:
    if mode == "default":
        return default_responder
    if mode == "ask":
        return terminal_responder(console)
    return None


def _needs_application(wf: WorkflowDefinition) -> bool:
    return any(not step.uses.startswith(BUILTIN_STEP_PREFIX) for step in wf.steps)


def make_run_context(
    *,
    workspace: Path,
    store: RunStore,
    wf: WorkflowDefinition,
    inputs: dict[str, Any],
    responder: InterruptResponder | None,
    run_id: str,
    engine_reason: str = "",
) -> RunContext:
    """The RunContext for a CLI run.

    Workflows of built-in demo steps need no model, retriever or tie-breaker,
    so they get a plain context and skip opening the router and the corpus;
    any other workflow gets the application's wiring (tui/wiring.py) when it is
    installed. Close it with :func:`close_run_context`.
    """
    if _needs_application(wf):
        try:
            wiring = importlib.import_module("tui.wiring")
        except ModuleNotFoundError:
            wiring = None
        if wiring is not None:
            context: RunContext = wiring.build_run_context(
                workspace, inputs=inputs, responder=responder, run_id=run_id, store=store
            )
            context.engine_reason = engine_reason
            return context
    return RunContext(store=store, inputs=inputs, run_id=run_id, responder=responder, engine_reason=engine_reason)


async def close_run_context(context: RunContext) -> None:
    if "wiring.unsubscribe" in context.extras:
        wiring = importlib.import_module("tui.wiring")
        await wiring.close_run_context(context)


# -- driving a run with live output ----------------------------------------------------

def drive(
    store: RunStore,
    context: RunContext,
    start: Callable[[RunContext], Awaitable[ExecutionResult]],
    console: Console,
) -> int:
    """Run ``start`` with the headless printer attached; print the final table; the exit code."""
    run_id = context.run_id
    unsubscribe = store.subscribe(HeadlessPrinter(console), run_id=run_id)

    async def go() -> ExecutionResult:
        try:
            return await start(context)
        finally:
            await close_run_context(context)

    try:
        result = asyncio.run(go())
    except KeyboardInterrupt:
        unsubscribe()
        console.print("[magenta]interrupted: the run is stored; continue it with "
                      f"workbench resume {run_id}[/]")
        return EXIT_CODES[RunStatus.CANCELLED]
    finally:
        unsubscribe()
    record = store.get_run(result.run_id)
    console.print(step_table(store.step_results(result.run_id), record.definition.step_ids))
    console.print(f"run {result.run_id}: {styled(result.status.value)}"
                  + (f" — {escape(result.reason)}" if result.reason else ""), highlight=False)
    if result.outputs:
        console.print(f"outputs: {escape(summarize(result.outputs, 300))}", highlight=False)
    if result.status == RunStatus.WAITING:
        console.print(f"answer and continue with: workbench resume {result.run_id} --answer approve", highlight=False)
    return EXIT_CODES[result.status]


# -- commands ----------------------------------------------------------------------------

_ON_INTERRUPT = click.Choice(["default", "wait", "ask"])


def _interrupt_mode(mode: str | None) -> str:
    if mode:
        return mode
    return "ask" if sys.stdin.isatty() else "wait"


@click.command("run")
@click.argument("workflow_file", type=click.Path(dir_okay=False))
@click.option("--input", "-i", "input_pairs", multiple=True, metavar="KEY=VALUE", help="A workflow input (repeatable).")
@click.option("--headless", is_flag=True, help="Print progress here instead of opening the app.")
@click.option("--engine", type=click.Choice(["auto", *ENGINES, "shadow"]), default="auto", show_default=True,
              help="Which engine runs it; auto picks by the workflow's shape; shadow runs both and compares "
                   "them (exit 6 on any difference).")
@click.option("--on-interrupt", type=_ON_INTERRUPT, default=None,
              help="Who answers prompts: default (approve / default edge, recorded as automatic), wait (store the "
                   "run WAITING), ask (on this terminal). Default: ask on a terminal, else wait.")
@click.pass_context
def run_command(ctx: click.Context, workflow_file: str, input_pairs: tuple[str, ...], headless: bool, engine: str,
                on_interrupt: str | None) -> None:
    """Run a workflow file and show its progress live."""
    wf = load_or_exit(workflow_file, BAD_INPUT)
    try:
        inputs = resolve_inputs(wf, parse_assignments(list(input_pairs)))
    except InputError as error:
        raise BadInput(str(error)) from None
    if engine == "shadow":
        ctx.exit(_shadow_run(ctx, wf, inputs, on_interrupt))
    if not headless and _open_in_app(ctx, Path(workflow_file), inputs, engine):
        return
    selection = select_engine(wf, engine)
    console = Console()
    store = open_store(ctx)
    try:
        context = make_run_context(
            workspace=workspace_path(ctx), store=store, wf=wf, inputs=inputs,
            responder=responder_for(_interrupt_mode(on_interrupt), console), run_id=new_run_id(),
            engine_reason=selection.reason,
        )
        code = drive(store, context, lambda c: create_engine(selection.name).execute(wf, c), console)
    finally:
        store.close()
    ctx.exit(code)


def _open_in_app(ctx: click.Context, path: Path, inputs: dict[str, Any], engine: str) -> bool:
    """Open the TUI on the new run; False when the app is not installed (the run goes headless)."""
    try:
        app_cmds = importlib.import_module("tui.commands.app_cmds")
        importlib.import_module("tui.app")
    except ModuleNotFoundError:
        return False
    app_cmds.open_app((ctx.obj or {}).get("workspace"), workflow=path, inputs=inputs,
                      engine=None if engine == "auto" else engine)
    return True


@click.command("validate")
@click.argument("workflow_file", type=click.Path(dir_okay=False))
def validate_command(workflow_file: str) -> None:
    """Check a workflow file: every problem as file:line:col: message, or ok with a summary."""
    wf = load_or_exit(workflow_file, 1)
    graph = WorkflowGraph(wf)
    nodes, edges = graph.nodes_and_edges()
    selection = select_engine(wf)
    click.echo(f"ok: {wf.name}: {len(nodes)} steps, {len(edges)} edges; "
               f"engine {selection.name} ({selection.reason})")


@click.command("resume")
@click.argument("run_id")
@click.option("--answer", default=None,
              help="Answer every pending interrupt: approve, reject, a routing TARGET, or JSON (edited outputs).")
@click.option("--on-interrupt", type=_ON_INTERRUPT, default=None,
              help="Who answers new prompts (as for run).")
@click.pass_context
def resume_command(ctx: click.Context, run_id: str, answer: str | None, on_interrupt: str | None) -> None:
    """Continue a run that was killed or is WAITING, without re-running finished steps."""
    register_steps()
    store = open_store(ctx)
    try:
        try:
            record = store.get_run(run_id)
        except UnknownRun as error:
            raise BadInput(f"{error.args[0]}; see workbench runs list") from None
        if record.status.final:
            raise BadInput(f"run {run_id} is {record.status.value}; only a RUNNING or WAITING run resumes")
        if not engine_available(record.engine):
            raise BadInput(f"run {run_id} ran on {record.engine}, which is not installed here")
        console = Console()
        if answer is not None:
            parsed = parse_answer(answer)
            pending = store.pending_interrupts(run_id)
            if not pending:
                console.print("[dim]nothing waits for an answer; resuming[/]")
            for interrupt in pending:
                store.record_answer(interrupt.interrupt_id, parsed)
        context = make_run_context(
            workspace=workspace_path(ctx), store=store, wf=record.definition, inputs=record.inputs,
            responder=responder_for(_interrupt_mode(on_interrupt), console), run_id=run_id,
            engine_reason=record.engine_reason,
        )
        code = drive(store, context, lambda c: create_engine(record.engine).resume(run_id, c), console)
    finally:
        store.close()
    ctx.exit(code)


@click.group("runs")
def runs_group() -> None:
    """Read the run store: list, show, export."""


@runs_group.command("list")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.pass_context
def runs_list(ctx: click.Context, limit: int) -> None:
    """The most recent runs, newest first."""
    from rich.table import Table

    store = open_store(ctx)
    try:
        runs = store.list_runs(limit)
    finally:
        store.close()
    console = Console()
    if not runs:
        console.print("no runs yet: try workbench run workflows/fan_out.yaml --headless")
        return
    table = Table(title="runs")
    for column in ("run", "workflow", "status", "engine", "started", "reason"):
        table.add_column(column, overflow="fold")
    from datetime import datetime

    for run in runs:
        started = datetime.fromtimestamp(run.created_ts).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(run.run_id, run.workflow, styled(run.status.value), run.engine, started, escape(run.reason))
    console.print(table)


def _get_run(store: RunStore, run_id: str) -> Any:
    try:
        return store.get_run(run_id)
    except UnknownRun as error:
        raise BadInput(f"{error.args[0]}; see workbench runs list") from None


@runs_group.command("show")
@click.argument("run_id")
@click.pass_context
def runs_show(ctx: click.Context, run_id: str) -> None:
    """One run: status, engine and why, inputs, outputs, every step, pending prompts."""
    store = open_store(ctx)
    try:
        record = _get_run(store, run_id)
        results = store.step_results(run_id)
        pending = store.pending_interrupts(run_id)
    finally:
        store.close()
    console = Console()
    console.print(f"[bold]run {record.run_id}[/]: {escape(record.workflow)} {styled(record.status.value)}"
                  + (f" — {escape(record.reason)}" if record.reason else ""), highlight=False)
    console.print(f"engine: {record.engine} ({escape(record.engine_reason)})", highlight=False)
    console.print(f"source: {escape(record.source)}", highlight=False)
    if record.parent_run_id:
        console.print(f"forked from {record.parent_run_id} at {record.forked_at}", highlight=False)
    console.print(f"inputs: {escape(summarize(record.inputs, 300))}", highlight=False)
    if record.outputs:
        console.print(f"outputs: {escape(summarize(record.outputs, 300))}", highlight=False)
    console.print(step_table(results, record.definition.step_ids))
    for interrupt in pending:
        console.print(f"[yellow]waiting: {interrupt.step_id} asks {escape(interrupt.request.prompt)}[/] "
                      f"[dim]({interrupt.interrupt_id})[/] — answer with: workbench resume {run_id} --answer approve",
                      highlight=False)


@runs_group.command("export")
@click.argument("run_id")
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write to this file instead of standard output.")
@click.pass_context
def runs_export(ctx: click.Context, run_id: str, fmt: str, output: str | None) -> None:
    """Every event of a run, one JSON object per line, in seq order."""
    store = open_store(ctx)
    try:
        _get_run(store, run_id)
        lines = [event.model_dump_json() for event in store.events(run_id)]
    finally:
        store.close()
    text = "".join(line + "\n" for line in lines)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


# -- shadow runs, history and fork (the LangGraph issue) -----------------------------------

SHADOW_DIFFERS = 6
"""Exit code of ``run --engine shadow`` when the two engines' canonical results differ."""


def _shadow_run(ctx: click.Context, wf: WorkflowDefinition, inputs: dict[str, Any], on_interrupt: str | None) -> int:
    """Both engines on the same inputs, the second replaying the first's journal; the difference report."""
    from engine.shadow import run_shadow

    first = select_engine(wf, "auto")
    console = Console()
    store = open_store(ctx)
    try:
        context = make_run_context(
            workspace=workspace_path(ctx), store=store, wf=wf, inputs=inputs,
            responder=responder_for(_interrupt_mode(on_interrupt), console), run_id=new_run_id(),
            engine_reason=f"shadow, {first.name} first ({first.reason})",
        )
        unsubscribe = store.subscribe(HeadlessPrinter(console))

        async def go() -> Any:
            try:
                return await run_shadow(wf, context, first.name)
            finally:
                await close_run_context(context)

        try:
            result = asyncio.run(go())
        finally:
            unsubscribe()
    finally:
        store.close()
    console.print(escape(result.report.render()), highlight=False)
    if result.second is None:
        console.print(f"[yellow]{escape(result.note)}[/]", highlight=False)
        return EXIT_CODES[result.first.status]
    if not result.report.identical:
        return SHADOW_DIFFERS
    return EXIT_CODES[result.first.status]


@runs_group.command("history")
@click.argument("run_id")
@click.pass_context
def runs_history(ctx: click.Context, run_id: str) -> None:
    """The checkpoints of a run: LangGraph's supersteps, or a Kahn run's stored step transitions."""
    from rich.table import Table

    from engine.langgraph_engine import LangGraphEngine

    store = open_store(ctx)
    try:
        record = _get_run(store, run_id)
        engine = LangGraphEngine(checkpoint_path=workspace_path(ctx) / "checkpoints.sqlite")
        entries = asyncio.run(engine.history(run_id, store))
    finally:
        store.close()
    table = Table(title=f"checkpoints of {run_id} ({record.engine})")
    for column in ("#", "checkpoint", "superstep", "source", "changed", "settled"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        changed = ", ".join(f"{step}={status}" for step, status in entry.changed.items())
        table.add_row(str(entry.index), entry.checkpoint_id, "" if entry.superstep is None else str(entry.superstep),
                      entry.source, escape(changed), str(len(entry.settled)))
    Console().print(table)


@runs_group.command("fork")
@click.argument("run_id")
@click.option("--at", "at_step", required=True, metavar="STEP",
              help="Keep every result not downstream of STEP; run STEP and everything downstream again.")
@click.option("--engine", type=click.Choice(["same", *ENGINES]), default="same", show_default=True,
              help="Which engine runs the fork (same: the one that ran RUN_ID).")
@click.option("--on-interrupt", type=_ON_INTERRUPT, default=None, help="Who answers prompts (as for run).")
@click.pass_context
def runs_fork(ctx: click.Context, run_id: str, at_step: str, engine: str, on_interrupt: str | None) -> None:
    """Time travel: a new run from RUN_ID's results, re-running STEP and what depends on it."""
    register_steps()
    store = open_store(ctx)
    try:
        record = _get_run(store, run_id)
        if at_step not in record.definition.step_ids:
            raise BadInput(f"workflow {record.workflow} has no step {at_step!r}; "
                           f"steps: {', '.join(record.definition.step_ids)}")
        name = record.engine if engine == "same" else engine
        if not engine_available(name):
            raise BadInput(f"the {name} engine is not installed here")
        console = Console()
        context = make_run_context(
            workspace=workspace_path(ctx), store=store, wf=record.definition, inputs=record.inputs,
            responder=responder_for(_interrupt_mode(on_interrupt), console), run_id=new_run_id(),
            engine_reason=f"fork of {run_id} at {at_step}",
        )
        code = drive(store, context, lambda c: create_engine(name).fork(run_id, at_step, c), console)
    finally:
        store.close()
    ctx.exit(code)


COMMANDS: list[click.Command] = [run_command, validate_command, resume_command, runs_group]
