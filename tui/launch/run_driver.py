"""Runs an engine job off the UI's event loop and bridges events and prompts back.

The engine runs in a Textual thread worker (the run screen starts :meth:`RunDriver.run` with
``run_worker(thread=True)``) on an asyncio loop of its own, so a CPU-heavy step never delays a
keypress (DESIGN §10). A job that raises ends its worker in the ERROR state, which reaches the
screen as ``Worker.StateChanged``. Events reach the UI through an
:class:`EventInbox` that the run store's bus fills from its delivery thread;
the UI drains it in batches on a ~20 Hz timer. An interrupt becomes a
:class:`PromptTicket` holding a ``concurrent.futures.Future`` — the
cross-thread form of Toad's "a prompt is a future inside a message": the UI
pushes a modal and sets the future's result, and the waiting step (and only
it, on the Kahn engine) continues.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised, RunEvent
from engine.protocol import ExecutionResult, InterruptResponder


class EventInbox:
    """A thread-safe FIFO of run events between producer threads and the UI timer, and the
    latest counts of what the run's start is indexing (before it has events to show)."""

    def __init__(self) -> None:
        self._events: deque[RunEvent] = deque()
        self._lock = threading.Lock()
        self._progress: tuple[str, int, int] | None = None

    def progress(self, what: str, done: int, total: int) -> None:
        """A :data:`tui.launch.parts.IndexProgress`: ``done`` of ``total`` of ``what``."""
        self._progress = (what, done, total)

    def waiting_on(self) -> tuple[str, int, int] | None:
        """The latest counts given to :meth:`progress` (None: none yet)."""
        return self._progress

    def put(self, events: list[RunEvent]) -> None:
        with self._lock:
            self._events.extend(events)

    def drain(self, limit: int | None = None) -> list[RunEvent]:
        """Take up to ``limit`` events (all when None), oldest first."""
        with self._lock:
            count = len(self._events) if limit is None else min(limit, len(self._events))
            return [self._events.popleft() for _ in range(count)]

    def __len__(self) -> int:
        return len(self._events)


@dataclass
class PromptTicket:
    """One interrupt waiting for a person; resolve ``answer`` to let the step go on."""

    event: InterruptRaised
    request: InterruptRequest
    answer: concurrent.futures.Future[InterruptAnswer | None] = field(
        default_factory=concurrent.futures.Future
    )

    def resolve(self, answer: InterruptAnswer | None) -> None:
        if not self.answer.done():
            self.answer.set_result(answer)


RunJob = Callable[[InterruptResponder, EventInbox], Coroutine[Any, Any, ExecutionResult]]
"""Builds and runs one engine run on the worker loop, subscribing ``inbox`` to its store."""


@dataclass(frozen=True)
class NewRunJob:
    """A :data:`RunJob` starting a new run whose id is chosen up front, so the run screen
    knows it before the first event arrives."""

    run_id: str
    run: RunJob

    def __call__(
        self, responder: InterruptResponder, inbox: EventInbox
    ) -> Coroutine[Any, Any, ExecutionResult]:
        return self.run(responder, inbox)


class RunDriver:
    """One run's bridge between its engine loop (in a thread worker) and the UI; thread-safe
    towards the UI."""

    def __init__(self, job: RunJob, on_prompt: Callable[[PromptTicket], None]) -> None:
        self.inbox = EventInbox()
        self._job = job
        self._on_prompt = on_prompt
        self._tickets: dict[str, PromptTicket] = {}
        self._tickets_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[ExecutionResult] | None = None
        self._closing = False
        self.started = threading.Event()
        self.finished = threading.Event()

    def run(self) -> ExecutionResult:
        """The worker's body: the job on a new event loop in the calling thread.

        A failure propagates, so the hosting worker ends in the ERROR state. The loop is closed
        without waiting for its default executor, as a thread left running by a cancelled step
        must not hold up leaving the app.
        """
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(self._job(self._respond, self.inbox))
            self.started.set()
            return loop.run_until_complete(self._task)
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self.started.set()
            self.finished.set()

    async def _respond(
        self, event: InterruptRaised, request: InterruptRequest
    ) -> InterruptAnswer | None:
        ticket = PromptTicket(event, request)
        with self._tickets_lock:
            if self._closing:
                return None
            self._tickets[event.interrupt_id] = ticket
        self._on_prompt(ticket)
        try:
            return await asyncio.wrap_future(ticket.answer)
        finally:
            with self._tickets_lock:
                self._tickets.pop(event.interrupt_id, None)

    def answer(self, interrupt_id: str, answer: InterruptAnswer) -> bool:
        """Resolve a live prompt; False when this driver is not waiting on it."""
        with self._tickets_lock:
            ticket = self._tickets.get(interrupt_id)
        if ticket is None:
            return False
        ticket.resolve(answer)
        return True

    def stop(self, timeout: float = 10.0) -> None:
        """Leave: open prompts are answered "nobody is there" (the run is stored WAITING).

        A run still busy after ``timeout`` is cancelled; what it stored stays stored. A driver
        whose worker never started has nothing to stop.
        """
        with self._tickets_lock:
            self._closing = True
            tickets = list(self._tickets.values())
        for ticket in tickets:
            ticket.resolve(None)
        if not self.started.is_set() or self.finished.wait(timeout):
            return
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        self.finished.wait(timeout)
