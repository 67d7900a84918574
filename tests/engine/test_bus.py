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
