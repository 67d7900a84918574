"""What the commands that run workflows share: the run store, answering interrupts, and driving
a run with live output.

Used by ``run_cmds`` (run, resume), ``runs_cmds`` (runs fork) and ``research_cmds`` (research).
Defines no commands itself. The import-light part every command shares (the workspace, loading a
workflow file, the bad-input error) is :mod:`tui.commands.command_context`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape

from engine.context import InterruptAnswer, InterruptRequest
from engine.event_lines import summarize
from engine.events import InterruptRaised, RunEvent
from engine.model_answers import disclosure, tally
from engine.protocol import ExecutionResult, InterruptResponder
from engine.states import RunStatus, StepStatus
from engine.store import BaseRunStore, InterruptRecord, RunOwned, RunReader
from research.events import describe_research_event
from tui import exit_codes
from tui.app.plan_draft import PlanDraft, PlanEditRefused
from tui.commands.command_context import BadInput, workspace_of
from tui.commands.seen_events import SeenEvents
from tui.present.headless import HeadlessPrinter, end_of_run, styled
from tui.present.progress import ProgressBoard, RunProgress, paused
from tui.root_options import SERVER_KEY

if TYPE_CHECKING:
    from tui.launch.run import Surface

EXIT_CODES: dict[RunStatus, int] = {
    RunStatus.COMPLETED: exit_codes.COMPLETED,
    RunStatus.FAILED: exit_codes.FAILED,
    RunStatus.PARTIAL: exit_codes.PARTIAL,
    RunStatus.WAITING: exit_codes.WAITING,
    RunStatus.CANCELLED: exit_codes.CANCELLED,
}


def open_store(ctx: click.Context) -> BaseRunStore:
    """The run store the command's config names (its ``store:``, else the workspace's file).

    Refused (one line) under ``workbench --server URL``: this command would otherwise act on
    this machine's runs while the person meant the server's."""
    from tui.config import config_from_context
    from tui.launch.stores import open_runs

    server = attached_server(ctx)
    if server is not None:
        raise BadInput(
            f"--server {server}: `{ctx.command_path}` works on this machine's store only; against"
            " a server use the app (workbench --server URL), or workbench --server URL with"
            " run FILE --headless, resume, or runs list|show|export"
        )
    return open_runs(workspace_of(ctx), config_from_context(ctx))


def attached_server(ctx: click.Context) -> str | None:
    """The root ``--server`` (or ``$WORKBENCH_SERVER``), if any."""
    obj = ctx.find_root().obj
    server = obj.get(SERVER_KEY) if isinstance(obj, dict) else None
    return server or None


def read_store(ctx: click.Context) -> RunReader:
    """The runs a reading command reads: the server's under ``workbench --server URL``, else
    :func:`open_store`'s."""
    from tui.client.http import ServerClient
    from tui.client.remote_store import RemoteRunStore

    server = attached_server(ctx)
    if server is not None:
        return RemoteRunStore(ServerClient(server))
    return open_store(ctx)


def store_location(ctx: click.Context) -> str:
    """Where :func:`open_store` keeps runs, as messages show it (never a password)."""
    from tui.config import config_from_context
    from tui.launch.stores import runs_location

    return runs_location(workspace_of(ctx), config_from_context(ctx))


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
            raise BadInput(
                f"--answer is not valid JSON: {error.msg} at column {error.colno}"
            ) from None
        if "action" in data:
            try:
                return InterruptAnswer.model_validate(data)
            except ValueError as error:
                raise BadInput(f"--answer is not an answer: {str(error).splitlines()[0]}") from None
        return InterruptAnswer(action="edit", value=data)
    if stripped.isidentifier():
        return InterruptAnswer(action="choose", value=stripped)
    return InterruptAnswer(action="answer", value=stripped)


def resume_hint(run_id: str, pending: Sequence[InterruptRecord], server: str | None = None) -> str:
    """The command that answers what waits: a bare answer for one prompt, one addressed to
    each step when several wait (a bare one would be refused); on ``server`` when the run is
    one of a server's (the command run without it would look in the local workspace)."""
    command = (
        f"workbench --server {server} resume {run_id}" if server else f"workbench resume {run_id}"
    )
    if len(pending) <= 1:
        return f"{command} --answer approve"
    return " ".join([command, *(f"--answer {p.step_id}=approve" for p in pending)])


async def default_responder(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    """`--on-interrupt default`: approve, or the request's own default (a tie-breaker's default edge)."""
    answer = request.default or InterruptAnswer(action="approve", note="default answer")
    return answer.model_copy(update={"automatic": True})


def terminal_responder(console: Console) -> InterruptResponder:
    """`--on-interrupt ask`: ask on the terminal; only the asking step waits meanwhile. A plan is
    shown as its numbered sub-questions; ``edit`` (or ``e``) on an approval edits the outputs."""
    lock = asyncio.Lock()

    async def respond(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer | None:
        async with lock:
            with paused(console):
                return await _ask(console, raised, request)

    return respond


async def _ask(
    console: Console, raised: InterruptRaised, request: InterruptRequest
) -> InterruptAnswer | None:
    console.print(f"[bold yellow]? {raised.step_id}: {escape(request.prompt)}[/]")
    outputs = request.payload.get("outputs", request.payload)
    draft = PlanDraft.from_outputs(outputs) if isinstance(outputs, dict) else None
    if draft is not None:
        for number, question in enumerate(draft.texts(), 1):
            console.print(f"  {number:>2}. {escape(question)}", highlight=False)
    elif request.payload:
        console.print(f"  [dim]{escape(summarize(request.payload, 200))}[/]")
    approval = request.kind != "tie_breaker"
    options = " / ".join(request.options) or "approve / reject"
    if approval and "edit" not in options:
        options += " / edit"
    console.print(
        f"  answer ({options}) [{DEFAULT_ANSWER}]: ", end="", markup=False, highlight=False
    )
    text = await read_line(sys.stdin.fileno())
    if text is None:  # end of input: nobody is there to answer
        return None
    if approval and text.strip().lower() in ("edit", "e"):
        if draft is not None:
            return await _edit_plan(console, outputs, draft)
        return await _edit_outputs(console, outputs if isinstance(outputs, dict) else {})
    return parse_answer(text or DEFAULT_ANSWER)


async def _edit_plan(
    console: Console, outputs: dict[str, Any], draft: PlanDraft
) -> InterruptAnswer | None:
    """Each sub-question in turn (Enter keeps it, new text replaces it, ``-`` deletes it), then
    new ones until an empty line: the plan as edited is the answer."""
    console.print("  edit the plan: Enter keeps a question, new text replaces it, - deletes it")
    index = 0
    for text in list(draft.texts()):
        console.print(f"  {index + 1:>2}. {escape(text)}\n      → ", end="", highlight=False)
        line = await read_line(sys.stdin.fileno())
        if line is None:
            return None
        try:
            if line.strip() == "-":
                draft.delete(index)
                continue
            if line.strip():
                draft.edit(index, line)
        except PlanEditRefused as refused:
            console.print(f"  [yellow]{escape(str(refused))}[/]")
        index += 1
    console.print("  new sub-questions, one a line (an empty line ends):")
    while True:
        console.print("   + ", end="", markup=False, highlight=False)
        line = await read_line(sys.stdin.fileno())
        if line is None or not line.strip():
            break
        draft.add(len(draft.questions) - 1, line)
    edited = {**outputs, **draft.answer()}
    if not draft.changed:
        return InterruptAnswer(action="approve")
    return InterruptAnswer(action="edit", value=edited)


async def _edit_outputs(console: Console, outputs: dict[str, Any]) -> InterruptAnswer | None:
    """The outputs as one line of JSON to change (Enter keeps them): the edit is the answer."""
    console.print(f"  outputs: {escape(summarize(outputs, 2000))}", highlight=False)
    while True:
        console.print("  edited outputs (JSON, Enter keeps them): ", end="", markup=False)
        line = await read_line(sys.stdin.fileno())
        if line is None:
            return None
        if not line.strip():
            return InterruptAnswer(action="approve")
        try:
            edited = json.loads(line)
        except json.JSONDecodeError as error:
            console.print(f"  [yellow]not JSON ({escape(error.msg)}); try again[/]")
            continue
        if isinstance(edited, dict):
            return InterruptAnswer(action="edit", value={**outputs, **edited})
        console.print("  [yellow]the outputs are a JSON object {...}; try again[/]")


DEFAULT_ANSWER = "approve"
"""What an empty line at the terminal prompt answers."""


async def read_line(fd: int) -> str | None:
    """The next line of ``fd`` without its line ending; None at the end of input.

    Read on the event loop, byte by byte as ``fd`` becomes readable, never in a thread: Ctrl-C
    then cancels the waiting task like any other await, and nothing is left blocked on the
    terminal when the process ends. (A thread blocked in ``read`` on the terminal lost the
    Ctrl-C now and then under load, and kept stdin's buffer locked at interpreter shutdown.)
    Byte by byte, so what follows the line stays unread for the next prompt.
    """
    loop = asyncio.get_running_loop()
    line = bytearray()
    answer: asyncio.Future[str | None] = loop.create_future()

    def text() -> str:
        return line.decode(sys.stdin.encoding or "utf-8", errors="replace").rstrip("\r")

    def take() -> bool:
        """Read one byte; True once the line (or the input) has ended."""
        byte = os.read(fd, 1)
        if byte and byte != b"\n":
            line.extend(byte)
            return False
        if not answer.done():
            answer.set_result(text() if byte or line else None)
        return True

    def readable() -> None:
        try:
            ended = take()
        except OSError as error:
            ended = True
            if not answer.done():
                answer.set_exception(error)
        if ended:
            loop.remove_reader(fd)

    try:
        loop.add_reader(fd, readable)
    except PermissionError:  # a regular file: the selector refuses it, and it never blocks
        while not take():
            pass
        return await answer
    try:
        return await answer
    finally:
        loop.remove_reader(fd)


def interrupt_mode(mode: str | None) -> str:
    """The ``--on-interrupt`` mode: as given, else ask on a terminal and wait otherwise."""
    if mode:
        return mode
    return "ask" if sys.stdin.isatty() else "wait"


def responder_for(mode: str, console: Console) -> InterruptResponder | None:
    if mode == "default":
        return default_responder
    if mode == "ask":
        return terminal_responder(console)
    return None


# -- driving a run with live output ----------------------------------------------------


def interrupted_line(store: RunReader, run_id: str) -> str:
    """What Ctrl-C left of run ``run_id``, read back from the store, and what the person can do
    with it: a run the engine closed as CANCELLED is final (``resume`` refuses it); one stopped
    before the engine closed it is resumable."""
    try:
        status = store.get_run(run_id).status
    except LookupError:
        return "interrupted: the run had not started; nothing of it was stored"
    if status.final:
        return (
            f"interrupted: the run is stored, {status.value}; "
            f"see what it did with workbench runs show {run_id}"
        )
    return f"interrupted: the run is stored; continue it with workbench resume {run_id}"


def step_statuses(store: RunReader, result: ExecutionResult) -> dict[str, StepStatus]:
    """Each step's status at the end of the run, in the workflow's order: as the engine that
    ran it returned them, or, for a run followed on a server (whose result names no step),
    read from the store — a whole definition and every step result, which a long local run is
    spared."""
    if result.step_statuses:
        return dict(result.step_statuses)
    stored = store.step_results(result.run_id)
    return {
        step_id: stored[step_id].status if step_id in stored else StepStatus.PENDING
        for step_id in store.get_run(result.run_id).definition.step_ids
    }


def drive(
    store: RunReader,
    run_id: str,
    run: Callable[[Surface], Coroutine[Any, Any, ExecutionResult]],
    console: Console,
    summary: Callable[[ExecutionResult], list[str]] | None = None,
    server: str | None = None,
) -> int:
    """Run ``run`` with the headless printer and the progress bars as its surface; print the final
    table (:func:`tui.present.headless.end_of_run`); the exit code.

    ``run`` opens the run (:func:`tui.launch.run.open_run`) with the surface it is given.
    ``summary`` gives the closing lines that say what the run produced (default: its outputs as
    one line of JSON). ``server``: the server whose run this is, named in the resume hint.
    """
    printer = HeadlessPrinter(console, domain=describe_research_event)
    seen = SeenEvents()
    try:
        with ProgressBoard(console) as board:
            progress = RunProgress(board)

            def surface(events: list[RunEvent]) -> None:
                seen(events)  # first: a printer that fails on a batch must not lose its count
                printer(events)
                progress(events)

            result = asyncio.run(run(surface))
    except RunOwned as error:
        raise BadInput(str(error)) from None
    except KeyboardInterrupt:
        console.print(f"[magenta]{escape(interrupted_line(store, run_id))}[/]", highlight=False)
        return EXIT_CODES[RunStatus.CANCELLED]
    for shown in end_of_run(
        step_statuses(store, result), lambda: store.step_results(result.run_id), result.run_id
    ):
        console.print(shown, highlight=False)
    console.print(
        f"run {result.run_id}: {styled(result.status.value)}"
        + (f" — {escape(result.reason)}" if result.reason else ""),
        highlight=False,
    )
    fallback = disclosure(tally(seen.step_finished(store, result.run_id)))
    if fallback:
        console.print(f"[bold yellow]{escape(fallback)}[/]", highlight=False)
    if summary is not None:
        for line in summary(result):
            console.print(escape(line), highlight=False)
    elif result.outputs:
        console.print(f"outputs: {escape(summarize(result.outputs, 300))}", highlight=False)
    if result.status == RunStatus.WAITING:
        console.print(
            "answer and continue with: "
            + resume_hint(result.run_id, store.pending_interrupts(result.run_id), server),
            highlight=False,
        )
    return EXIT_CODES[result.status]
