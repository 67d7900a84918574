"""The event bus's delivery thread lets events gather before it calls a subscriber."""

from __future__ import annotations

import threading

from engine.bus import EventBus
from engine.events import InterruptRaised, Log, RunEvent


def _log(seq: int) -> RunEvent:
    return Log(run_id="r", message=str(seq)).model_copy(update={"seq": seq})


def test_events_published_one_by_one_arrive_together_and_closing_cuts_the_gathering_short() -> None:
    """Woken by the first event, the thread gathers (for an hour here); the next events do
    not wake it, and closing the bus delivers all of them at once instead of waiting."""
    bus = EventBus(gather_s=3600)
    batches: list[list[int]] = []
    bus.subscribe(lambda batch: batches.append([event.seq for event in batch]))
    for seq in range(1, 6):
        bus.publish([_log(seq)])
    bus.close()
    assert batches == [[1, 2, 3, 4, 5]]


def test_without_gathering_each_event_is_delivered_as_soon_as_it_is_published() -> None:
    bus = EventBus(gather_s=0)
    delivered = threading.Semaphore(0)
    batches: list[list[int]] = []

    def record(batch: list[RunEvent]) -> None:
        batches.append([event.seq for event in batch])
        delivered.release()

    bus.subscribe(record)
    for seq in range(1, 4):
        bus.publish([_log(seq)])
        assert delivered.acquire(timeout=10)
    bus.close()
    assert batches == [[1], [2], [3]]


def test_an_event_a_prompt_or_the_end_may_follow_is_delivered_at_once_with_those_before_it() -> (
    None
):
    """interrupt_raised cuts the gathering short (for an hour here): it and the events
    gathered before it arrive while the bus is still open."""
    bus = EventBus(gather_s=3600)
    delivered = threading.Event()
    batches: list[list[str]] = []

    def record(batch: list[RunEvent]) -> None:
        batches.append([event.kind for event in batch])
        delivered.set()

    bus.subscribe(record)
    bus.publish([_log(1)])
    bus.publish([_log(2)])
    raised = InterruptRaised(
        run_id="r", step_id="s", interrupt_id="i", interrupt_kind="approval", prompt="ok?"
    ).model_copy(update={"seq": 3})
    bus.publish([raised])
    assert delivered.wait(10)
    assert [kind for batch in batches for kind in batch] == ["log", "log", "interrupt_raised"]
    bus.close()


class _HeldSubscriber:
    """A subscriber held inside its first batch until released: what is published meanwhile
    waits in the bus, and the test reads the bus's state without racing its thread."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, batch: list[RunEvent]) -> None:
        self.events += [(event.run_id, event.seq) for event in batch]
        self.entered.set()
        assert self.release.wait(10)

    def seqs(self, run_id: str = "r") -> list[int]:
        return [seq for run, seq in self.events if run == run_id]


def _raised(seq: int) -> RunEvent:
    return InterruptRaised(
        run_id="r", step_id="s", interrupt_id="i", interrupt_kind="approval", prompt="ok?"
    ).model_copy(update={"seq": seq})


def test_an_event_no_prompt_follows_leaves_the_thread_gathering() -> None:
    """Published while the subscriber is busy, a log event is queued without asking for a
    delivery at once (the thread will gather after it); an interrupt_raised asks for one."""
    bus = EventBus(gather_s=3600)
    held = _HeldSubscriber()
    bus.subscribe(held)
    [subscriber] = bus._subscribers
    bus.publish([_raised(1)])
    assert held.entered.wait(10)
    bus.publish([_log(2)])
    assert subscriber._at_once is False
    bus.publish([_raised(3)])
    assert subscriber._at_once is True
    held.release.set()
    bus.close()
    assert held.seqs() == [1, 2, 3]


def test_a_subscriber_behind_by_its_bound_reads_back_from_the_backlog_only_past_it() -> None:
    """With ``max_pending`` events waiting the queue is full, not overflowed: nothing is read
    back; one more and the queue is dropped, the run's events read back from the backlog
    (each once, in order), and the queue stays within its bound."""
    stored = [_log(seq) for seq in range(1, 10)]
    reads: list[tuple[str, int]] = []

    def backlog(run_id: str, after_seq: int) -> list[RunEvent]:
        reads.append((run_id, after_seq))
        return [event for event in stored if event.seq > after_seq]

    bus = EventBus(backlog=backlog, max_pending=3, gather_s=0)
    held = _HeldSubscriber()
    bus.subscribe(held)
    [subscriber] = bus._subscribers
    bus.publish(stored[:1])
    assert held.entered.wait(10)
    bus.publish(stored[1:4])
    assert reads == [] and len(subscriber._pending) == 3
    bus.publish(stored[4:5])
    assert len(subscriber._pending) == 0
    bus.publish(stored[5:9])
    assert len(subscriber._pending) == 0
    held.release.set()
    bus.close()
    assert reads == [("r", 1)]
    assert held.seqs() == list(range(1, 10))


def test_a_run_read_back_from_the_backlog_does_not_hold_back_another_runs_events() -> None:
    """One run's events overflowed the queue and are read back from the store; the events of
    another run published after are queued and delivered as they come."""
    other = [Log(run_id="o", message=str(seq)).model_copy(update={"seq": seq}) for seq in (1, 2)]
    stored = [_log(seq) for seq in range(1, 6)]
    bus = EventBus(
        backlog=lambda run_id, after: [e for e in stored if e.run_id == run_id and e.seq > after],
        max_pending=2,
        gather_s=0,
    )
    held = _HeldSubscriber()
    bus.subscribe(held)
    bus.publish(stored[:1])
    assert held.entered.wait(10)
    bus.publish(stored[1:5])  # past the bound: run r is read back
    bus.publish(other)
    held.release.set()
    bus.close()
    assert held.seqs("r") == [1, 2, 3, 4, 5]
    assert held.seqs("o") == [1, 2]
