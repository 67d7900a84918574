"""The in-process event bus: fans stored events out to subscribers.

The store calls :meth:`EventBus.publish` only after the events are committed,
so a subscriber never sees an event that a crash could take back.

Each subscriber has its own delivery thread and receives *batches*: every event
published since its last callback returned arrives in one call (coalesced).
Publishing never waits for a subscriber. Woken by an event, the thread lets more gather for
``GATHER_S`` before it delivers (closing the bus cuts the wait short, so nothing waits at
the end of a run): a run of thousands of short steps publishes every few tenths of a
millisecond, and waking a thread, handing it the interpreter lock and calling the subscriber
for each commit cost the run more than its engine did (issue 26). The events are committed
before they are published, so the wait delays what a subscriber shows by at most
``GATHER_S`` and changes nothing that is stored or its order. An event after which the run may
wait for a person or is done (``AT_ONCE``) is delivered at once, with everything before it:
what a console prints about a step that asks a question is never late behind the question. The pending queue is bounded: a
subscriber that falls more than ``max_pending`` events behind stops receiving
copies, and its thread later reads the missed events back from the store
(``backlog``) — the subscriber sees every event once, in order, and the bus
memory stays bounded however slow it is.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence

from engine.events import RunEvent

BatchCallback = Callable[[list[RunEvent]], None]
"""A subscriber: called with a batch of events of one or more runs, in seq order per run."""

BacklogReader = Callable[[str, int], list[RunEvent]]
"""(run_id, after_seq) -> the stored events after that seq (the store's ``events``)."""

Unsubscribe = Callable[[], None]

GATHER_S = 0.02
"""How long a woken delivery thread lets events gather before it calls its subscriber: well
below what a person notices on a screen, long enough that a fast run's events arrive in a few
dozen batches a second instead of one per commit."""

AT_ONCE = frozenset({"interrupt_raised", "run_finished"})
"""The kinds of event delivered without gathering: a prompt or the end of the run follows."""

log = logging.getLogger(__name__)
"""A failing subscriber is logged here, not printed: stderr would paint over the app."""


class _Subscriber:
    def __init__(
        self,
        callback: BatchCallback,
        run_id: str | None,
        backlog: BacklogReader | None,
        max_pending: int,
        gather_s: float,
    ) -> None:
        self.callback = callback
        self.run_id = run_id
        self._backlog = backlog
        self._max_pending = max_pending
        self._pending: deque[RunEvent] = deque()
        self._overflowed: set[str] = set()
        """Runs whose events were dropped from the queue and must be read back from the store."""
        self._delivered: dict[str, int] = {}
        """Per run, the highest seq handed to the callback (drops duplicates after a catch-up)."""
        self._gather_s = gather_s
        self._gathering = False
        """Whether the thread is letting events gather: an offer then does not wake it."""
        self._at_once = False
        """Whether an event of ``AT_ONCE`` kind waits: nothing more is gathered."""
        self._condition = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(
            target=self._deliver_forever, name="event-bus-subscriber", daemon=True
        )
        self._thread.start()

    def wants(self, event: RunEvent) -> bool:
        return self.run_id is None or event.run_id == self.run_id

    def offer(self, events: Sequence[RunEvent]) -> None:
        """Queue ``events`` (those of a run being read back from the store are left there) and
        wake the thread unless it is gathering. Called by the writer after every commit: the
        usual case, no run read back, queues the events as they are."""
        at_once = False
        for event in events:
            if event.kind in AT_ONCE:
                at_once = True
        with self._condition:
            if self._overflowed:
                events = [event for event in events if event.run_id not in self._overflowed]
            self._pending.extend(events)
            if len(self._pending) > self._max_pending and self._backlog is not None:
                self._overflowed.update(event.run_id for event in self._pending)
                self._pending.clear()
            self._at_once = self._at_once or at_once
            if at_once or not self._gathering:
                self._condition.notify()

    def close(self, timeout: float | None) -> None:
        """Stop after delivering everything already published."""
        with self._condition:
            self._closing = True
            self._condition.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _take(self) -> tuple[list[RunEvent], set[str], bool]:
        with self._condition:
            while not self._pending and not self._overflowed and not self._closing:
                self._condition.wait()
            if self._gather_s > 0 and not self._closing and not self._at_once:
                self._gathering = True
                self._condition.wait(self._gather_s)  # woken early by close() or AT_ONCE
                self._gathering = False
            self._at_once = False
            batch = list(self._pending)
            self._pending.clear()
            catch_up = set(self._overflowed)
            self._overflowed.clear()
            done = self._closing and not batch and not catch_up
            return batch, catch_up, done

    def _deliver_forever(self) -> None:
        while True:
            batch, catch_up, done = self._take()
            if done:
                return
            events: list[RunEvent] = []
            if catch_up and self._backlog is not None:
                for run_id in sorted(catch_up):
                    events.extend(self._backlog(run_id, self._delivered.get(run_id, 0)))
            events.extend(batch)
            fresh: list[RunEvent] = []
            for event in events:
                if event.seq <= self._delivered.get(event.run_id, 0):
                    continue
                self._delivered[event.run_id] = event.seq
                fresh.append(event)
            if fresh:
                try:
                    self.callback(fresh)
                except Exception:  # noqa: BLE001 - a broken subscriber must not stop delivery to itself or others
                    log.exception(
                        "event subscriber %r failed on a batch of %d event(s) (%s seq %d-%d); "
                        "delivery goes on",
                        self.callback,
                        len(fresh),
                        fresh[0].run_id,
                        fresh[0].seq,
                        fresh[-1].seq,
                    )


class EventBus:
    """Fans committed events out to subscribers without ever blocking the publisher."""

    def __init__(
        self,
        backlog: BacklogReader | None = None,
        max_pending: int = 10_000,
        gather_s: float = GATHER_S,
    ) -> None:
        self._backlog = backlog
        self._max_pending = max_pending
        self._gather_s = gather_s
        self._subscribers: list[_Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, callback: BatchCallback, run_id: str | None = None) -> Unsubscribe:
        """Deliver batches of events (of ``run_id`` only, when given) to ``callback``.

        The returned function unsubscribes after delivering what was already
        published (waiting up to 10 s for a slow callback to take it).
        """
        subscriber = _Subscriber(callback, run_id, self._backlog, self._max_pending, self._gather_s)
        with self._lock:
            self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)
            subscriber.close(timeout=10.0)

        return unsubscribe

    def subscribed(self) -> bool:
        """Whether anyone subscribes now (a store builds the events it publishes only then)."""
        return bool(self._subscribers)

    def publish(self, events: Sequence[RunEvent]) -> None:
        if not events or not self._subscribers:
            return
        with self._lock:
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            # a subscriber to every run (the printer, the app) takes the commit's events as
            # they are: the writer publishes after every commit
            wanted = (
                events
                if subscriber.run_id is None
                else [event for event in events if subscriber.wants(event)]
            )
            if wanted:
                subscriber.offer(wanted)

    def close(self) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
            self._subscribers.clear()
        for subscriber in subscribers:
            subscriber.close(timeout=10.0)
