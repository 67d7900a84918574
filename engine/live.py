"""Live model output: the text of a model call while it streams, for whoever watches the run.

These events are not run events: they are never stored, carry no ``seq`` and are not replayed.
The stored run keeps the final answer (the step's outputs) and the call journal, so replay and
resume are unchanged; a viewer that attaches late simply starts from the next live event.

A model call that streams (``StepContext.llm`` with a streaming model caller) reports
``start`` / ``text`` / ``abort`` per provider attempt; :class:`OutputCoalescer` turns that into
:class:`ModelOutput` events carrying everything the current attempt has produced so far, at
most one per ``interval_s`` (plus one when an attempt is voided and one when the call ends),
so a fast stream cannot flood a display.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Literal

from engine.spec import Frozen

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


class LiveChannel:
    """Fans live model output out to listeners, on the caller's thread; never blocks on them."""

    def __init__(self) -> None:
        self._listeners: list[tuple[LiveListener, str | None]] = []
        self._lock = threading.Lock()

    def subscribe(self, listener: LiveListener, run_id: str | None = None) -> Callable[[], None]:
        entry = (listener, run_id)
        with self._lock:
            self._listeners.append(entry)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._listeners:
                    self._listeners.remove(entry)

        return unsubscribe

    def publish(self, event: ModelOutput) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener, run_id in listeners:
            if run_id is not None and run_id != event.run_id:
                continue
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
    ) -> None:
        self._channel = channel
        self._run_id = run_id
        self._step_id = step_id
        self._iteration = iteration
        self._call_index = call_index
        self._interval_s = interval_s
        self._clock = clock
        self._parts: list[str] = []
        self._provider = ""
        self._restarted = False
        self._last_sent: float | None = None

    def on_event(self, kind: StreamKind, provider: str, text: str) -> None:
        if (
            kind == "start"
        ):  # a later attempt voids an earlier one's text (e.g. it failed validation)
            self._restarted = self._restarted or bool(self._parts)
            self._provider = provider
            self._parts = []
        elif kind == "text":
            self._parts.append(text)
        else:  # abort: what this attempt showed is void
            self._parts = []
            self._restarted = True
            self._send()
            return
        now = self._clock()
        if self._last_sent is None or now - self._last_sent >= self._interval_s:
            self._send()

    def close(self) -> None:
        """The call ended (answered or not): send the final state, marked done."""
        self._send(done=True)

    def _send(self, *, done: bool = False) -> None:
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
