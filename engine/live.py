"""Live model output: the text of a model call while it streams, for whoever watches the run.

These events are not run events: they are never stored, carry no ``seq`` and are not replayed.
The stored run keeps the final answer (the step's outputs) and the call journal, so replay and
resume are unchanged. A viewer that attaches while a call streams is handed that call's text so
far at once (the channel keeps the latest event of every unfinished call), then the next events.

A model call that streams (``StepContext.llm`` with a streaming model caller) reports
``start`` / ``text`` / ``abort`` per provider attempt; :class:`OutputCoalescer` turns that into
:class:`ModelOutput` events carrying everything the current attempt has produced so far, at
most one per ``interval_s`` (plus one when an attempt is voided and one when the call ends),
so a fast stream cannot flood a display. It holds at most :data:`MAX_ANSWER_CHARS` of an
attempt's text, the most the router lets any provider answer (plumbing/answer_bound.py): a provider
that streams for ever is cut by the router at its own bound, and whatever it sent before that
costs the display no more than one answer's text.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from plumbing.answer_bound import MAX_ANSWER_CHARS
from plumbing.frozen import Frozen

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

StreamKind = Literal["start", "text", "abort"]
ModelOutputSink = Callable[[StreamKind, str, str], None]
"""(kind, provider, text) from a streaming model caller: ``text`` is a new piece for ``text``,
the reason for ``abort``, empty for ``start``."""


class ModelOutput(Frozen):
    kind: Literal["model_output"] = "model_output"
    run_id: str
    step_id: str
    iteration: int
    call_index: int
    provider: str = ""
    text: str = ""
    """All the text of the current attempt so far (not a delta): a display just replaces."""
    restarted: bool = False
    """The attempt before failed mid-stream: what it showed is void and ``text`` starts over."""
    done: bool = False
    """The call has ended; its answer is in the step's outputs (and the journal)."""


LiveListener = Callable[[ModelOutput], None]


CallKey = tuple[str, str, int, int]
"""(run_id, step_id, iteration, call_index): one model call."""


class LiveChannel:
    """Fans live model output out to listeners, on the caller's thread; never blocks on them."""

    def __init__(self) -> None:
        self._listeners: list[tuple[LiveListener, str | None]] = []
        self._streaming: dict[CallKey, ModelOutput] = {}
        """The latest event of every call that has not ended, for listeners that come late."""
        self._lock = threading.Lock()

    def subscribe(self, listener: LiveListener, run_id: str | None = None) -> Callable[[], None]:
        """Listen to ``run_id``'s calls (None: every run's); the calls streaming now are
        handed over first, on the subscriber's thread, each as its latest event."""
        entry = (listener, run_id)
        with self._lock:
            self._listeners.append(entry)
            current = [
                event
                for event in self._streaming.values()
                if run_id is None or event.run_id == run_id
            ]
        for event in current:
            self._deliver(listener, event)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._listeners:
                    self._listeners.remove(entry)

        return unsubscribe

    def publish(self, event: ModelOutput) -> None:
        key = (event.run_id, event.step_id, event.iteration, event.call_index)
        with self._lock:
            if event.done:
                self._streaming.pop(key, None)
            else:
                self._streaming[key] = event
            listeners = list(self._listeners)
        for listener, run_id in listeners:
            if run_id is None or run_id == event.run_id:
                self._deliver(listener, event)

    @staticmethod
    def _deliver(listener: LiveListener, event: ModelOutput) -> None:
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - a broken viewer must not fail the model call
            log.exception("live output listener %r failed", listener)


class OutputCoalescer:
    """One model call's stream as coalesced :class:`ModelOutput` events on a channel."""

    def __init__(
        self,
        channel: LiveChannel,
        *,
        run_id: str,
        step_id: str,
        iteration: int,
        call_index: int,
        interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        max_chars: int = MAX_ANSWER_CHARS,
    ) -> None:
        self._channel = channel
        self._run_id = run_id
        self._step_id = step_id
        self._iteration = iteration
        self._call_index = call_index
        self._interval_s = interval_s
        self._clock = clock
        self._parts: list[str] = []
        self._chars = 0
        self._max_chars = max_chars
        self._provider = ""
        self._restarted = False
        self._last_sent: float | None = None
        self._pending: asyncio.TimerHandle | None = None
        """The deferred send of text the interval held back (on the caller's event loop)."""

    def on_event(self, kind: StreamKind, provider: str, text: str) -> None:
        if (
            kind == "start"
        ):  # a later attempt voids an earlier one's text (e.g. it failed validation)
            self._restarted = self._restarted or bool(self._parts)
            self._provider = provider
            self._parts, self._chars = [], 0
        elif kind == "text":
            kept = text[: self._max_chars - self._chars]
            if not kept:
                return  # past the bound: the router fails this attempt; nothing more is held
            self._parts.append(kept)
            self._chars += len(kept)
        else:  # abort: what this attempt showed is void
            self._parts, self._chars = [], 0
            self._restarted = True
            self._send()
            return
        now = self._clock()
        wait = 0.0 if self._last_sent is None else self._interval_s - (now - self._last_sent)
        if wait <= 0:
            self._send()
        elif self._pending is None:
            self._send_later(wait)

    def close(self) -> None:
        """The call ended (answered or not): send the final state, marked done."""
        self._send(done=True)

    def _send_later(self, delay_s: float) -> None:
        """Send what is held back after ``delay_s`` unless something sends first; outside an
        event loop (a synchronous caller) the next piece or the close sends it instead."""
        import asyncio  # here, not at the top: checking a workflow imports this module, not asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._pending = loop.call_later(delay_s, self._send)

    def _send(self, *, done: bool = False) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        self._channel.publish(
            ModelOutput(
                run_id=self._run_id,
                step_id=self._step_id,
                iteration=self._iteration,
                call_index=self._call_index,
                provider=self._provider,
                text="".join(self._parts),
                restarted=self._restarted,
                done=done,
            )
        )
        self._last_sent = self._clock()
        self._restarted = False
