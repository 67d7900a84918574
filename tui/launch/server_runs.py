"""The app's runs on a `workbench server` (``workbench --server URL``): run jobs that queue a
run there (or find it already going) and follow it live, the app's prompts answered on the
server. The server's workers run it; nothing runs in this process."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

from engine.errors import Problem, WorkflowLoadError
from engine.events import InterruptRaised, RunEvent
from engine.protocol import ExecutionResult, InterruptResponder
from plumbing.yaml_reading import WORKFLOW_MAX_BYTES
from tui.client.follow import RECONNECT_MAX_S, RECONNECT_MIN_S, follow_events
from tui.client.http import ServerClient, ServerError, ServerUnreachable
from tui.client.remote_store import RemoteRunStore
from tui.launch.run_driver import EventInbox, NewRunJob, RunJob

log = logging.getLogger("workbench.client")
T = TypeVar("T")


def follow_job(
    client: ServerClient, run_id: str, after_seq: int = 0, start: Callable[[], object] | None = None
) -> RunJob:
    """A job that, after ``start`` (a request queueing the run), follows ``run_id`` on the
    server from after ``after_seq``: its events into the app's inbox, each prompt asked through
    the app's responder and the answer sent to the server (which queues the run again)."""
    store = RemoteRunStore(client)

    async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
        asking: set[asyncio.Task[None]] = set()

        async def ask(event: InterruptRaised) -> None:
            record = await _reaching(store.get_interrupt, event.interrupt_id)
            if record is None or record.status != "pending":
                return  # answered already (elsewhere, or before this follow began)
            answer = await responder(event, record.request)
            if answer is not None:  # None: nobody is there, the run stays WAITING
                await _reaching(store.record_answer, event.interrupt_id, answer)

        async def on_event(event: RunEvent) -> None:
            if event.seq > after_seq:
                inbox.put([event])
            if isinstance(event, InterruptRaised):
                task = asyncio.create_task(ask(event))
                asking.add(task)
                task.add_done_callback(asking.discard)

        if start is not None:
            await asyncio.to_thread(start)
        for event in await _asked_before(store, run_id, after_seq):
            await on_event(event)  # the screen shows it already; asked here, answered with retries
        try:
            await follow_events(client, run_id, after_seq, on_event)
        finally:
            for task in list(asking):
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
        record = await asyncio.to_thread(store.get_run, run_id)
        return ExecutionResult(
            run_id=run_id,
            status=record.status,
            reason=record.reason,
            outputs=record.outputs,
            engine=record.engine,
        )

    return job


def _text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        problem = Problem(str(path), 1, 1, "the file is not UTF-8 text; save it as UTF-8")
        raise WorkflowLoadError([problem]) from None


async def _asked_before(store: RemoteRunStore, run_id: str, after_seq: int) -> list[RunEvent]:
    """The prompts of ``run_id`` raised up to ``after_seq`` (shown already) and still open."""
    pending = await _reaching(store.pending_interrupts, run_id)
    if not pending:
        return []
    open_ids = {record.interrupt_id for record in pending}
    events = await _reaching(store.events, run_id) or []
    return [
        event
        for event in events
        if isinstance(event, InterruptRaised)
        and event.seq <= after_seq
        and event.interrupt_id in open_ids
    ]


async def _reaching(call: Callable[..., T], *args: Any) -> T | None:
    """``call(*args)`` in a thread, made again after a pause while the server cannot be
    reached (restarting), so a prompt raised or answered then is not lost; None (logged) when
    the server refuses it (answered meanwhile, the run ended)."""
    pause = RECONNECT_MIN_S
    while True:
        try:
            return await asyncio.to_thread(call, *args)
        except ServerUnreachable:
            pass
        except ServerError as error:
            log.warning("the server refused: %s", error)
            return None
        await asyncio.sleep(pause)
        pause = min(pause * 2, RECONNECT_MAX_S)


def start_job(
    client: ServerClient,
    path: Path,
    inputs: dict[str, Any],
    engine: str | None,
    run_id: str,
) -> NewRunJob:
    """A job sending the workflow file ``path`` to the server as a new run ``run_id`` (the
    server checks it as `workbench validate` does) and following it."""

    def start() -> object:
        with path.open("rb") as file:
            # a larger file is read one byte past the limit: the server says it is too large
            data = file.read(WORKFLOW_MAX_BYTES + 1)
        return client.post(
            "/v1/runs",
            {
                "definition": _text(path, data),
                "filename": path.name,
                "inputs": inputs,
                "engine": engine or "auto",
                "run_id": run_id,
            },
        )

    return NewRunJob(run_id, follow_job(client, run_id, start=start))
