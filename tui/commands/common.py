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
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape

from engine.context import InterruptAnswer, InterruptRequest
from engine.event_lines import summarize
from engine.events import InterruptRaised, RunEvent
from engine.model_answers import disclosure, tally
from engine.protocol import ExecutionResult, InterruptResponder
from engine.states import RunStatus
from engine.store import RunOwned, RunStore
from research.events import describe_research_event
from tui.commands.command_context import BadInput, workspace_of
from tui.present.headless import HeadlessPrinter, step_table, styled
from tui.present.progress import ProgressBoard, RunProgress

if TYPE_CHECKING:
    from tui.launch.run import Surface

EXIT_CODES: dict[RunStatus, int] = {
    RunStatus.COMPLETED: 0,
    RunStatus.FAILED: 1,
    RunStatus.PARTIAL: 3,
    RunStatus.WAITING: 4,
    RunStatus.CANCELLED: 5,
}


def open_store(ctx: click.Context) -> RunStore:
    return RunStore(workspace_of(ctx).runs_db)


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
            console.print(
                f"  answer ({options}) [{DEFAULT_ANSWER}]: ", end="", markup=False, highlight=False
            )
            text = await read_line(sys.stdin.fileno())
            if text is None:  # end of input: nobody is there to answer
                return None
            return parse_answer(text or DEFAULT_ANSWER)

    return respond


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


def interrupted_line(store: RunStore, run_id: str) -> str:
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


def drive(
    store: RunStore,
    run_id: str,
    run: Callable[[Surface], Coroutine[Any, Any, ExecutionResult]],
    console: Console,
) -> int:
    """Run ``run`` with the headless printer and the progress bars as its surface; print the final
    table; the exit code.

    ``run`` opens the run (:func:`tui.launch.run.open_run`) with the surface it is given.
    """
    printer = HeadlessPrinter(console, domain=describe_research_event)
    try:
        with ProgressBoard(console) as board:
            progress = RunProgress(board)

            def surface(events: list[RunEvent]) -> None:
                printer(events)
                progress(events)

            result = asyncio.run(run(surface))
    except RunOwned as error:
        raise BadInput(str(error)) from None
    except KeyboardInterrupt:
        console.print(f"[magenta]{escape(interrupted_line(store, run_id))}[/]", highlight=False)
        return EXIT_CODES[RunStatus.CANCELLED]
    record = store.get_run(result.run_id)
    console.print(step_table(store.step_results(result.run_id), record.definition.step_ids))
    console.print(
        f"run {result.run_id}: {styled(result.status.value)}"
        + (f" — {escape(result.reason)}" if result.reason else ""),
        highlight=False,
    )
    fallback = disclosure(tally(store.events(result.run_id)))
    if fallback:
        console.print(f"[bold yellow]{escape(fallback)}[/]", highlight=False)
    if result.outputs:
        console.print(f"outputs: {escape(summarize(result.outputs, 300))}", highlight=False)
    if result.status == RunStatus.WAITING:
        console.print(
            f"answer and continue with: workbench resume {result.run_id} --answer approve",
            highlight=False,
        )
    return EXIT_CODES[result.status]
