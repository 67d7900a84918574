"""What a headless run's surface was shown, kept for the lines printed at the run's end.

The end of a run says how many model answers came from the built-in fallback
(engine/model_answers.py), counted from the run's ``step_finished`` events. The surface was
handed those events as they were stored (every event once, in order: engine/bus.py), so the
end reads back from the store only the events the surface did not see — every event of a
resumed run, whose earlier events were stored before it subscribed; none of a run printed from
its first event — rather than every event of a long run once more (issue 26: at 4,000 steps,
12,000 events parsed again to find none from the fallback).
"""

from __future__ import annotations

import threading

from engine.events import RunEvent, StepFinished
from engine.store import RunReader

FIRST_SEQ = 1
"""The seq of a run's first event (``run_started``)."""


class SeenEvents:
    """A surface: the seq of the first and last event it was handed, and the ``step_finished``
    among them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """The surface is called on the store's delivery thread, read on the command's."""
        self._first: int | None = None
        self._last = 0
        self._finished: list[StepFinished] = []

    def __call__(self, events: list[RunEvent]) -> None:
        with self._lock:
            for event in events:
                if self._first is None:
                    self._first = event.seq
                self._last = event.seq
                if isinstance(event, StepFinished):
                    self._finished.append(event)

    def step_finished(self, store: RunReader, run_id: str) -> list[RunEvent]:
        """Run ``run_id``'s ``step_finished`` events in seq order — those seen, with whatever
        the store holds that was not seen (the other kinds among them left for the caller to
        pass over)."""
        with self._lock:
            first, last, finished = self._first, self._last, list(self._finished)
        if first != FIRST_SEQ:
            return store.events(run_id)
        return [*finished, *store.events(run_id, after_seq=last)]
