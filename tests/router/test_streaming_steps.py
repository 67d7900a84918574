"""A step's model call streams: partial text reaches live listeners as coalesced events, the
answer and the journal are the final response only, and a replay streams nothing.

Real parts: the router over HTTP to the loopback fault server, the application's model caller
(tui/wiring.py), the engine's StepContext and its journal in a real SQLite run store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.context import RunBudget, StepContext, StepServices
from engine.journal import StoreJournal
from engine.live import LiveChannel, ModelOutput, OutputCoalescer
from engine.spec import StepSpec
from engine.store import RunStore
from router.fault.server import FaultServer
from tui.launch.wiring import RouterModelCaller

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request, until

pytestmark = pytest.mark.timeout(60)


class Ticks:
    """An injected monotonic clock."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def coalescer(channel: LiveChannel, clock: Ticks) -> OutputCoalescer:
    return OutputCoalescer(
        channel, run_id="r", step_id="s", iteration=0, call_index=2, interval_s=0.1, clock=clock
    )


def test_pieces_within_the_interval_are_coalesced_into_one_event() -> None:
    channel, clock, seen = LiveChannel(), Ticks(), []
    channel.subscribe(seen.append)
    output = coalescer(channel, clock)

    output.on_event("start", "p1", "")
    for piece in ("a", "b", "c"):
        output.on_event("text", "p1", piece)
    clock.now = 0.15
    output.on_event("text", "p1", "d")
    output.close()

    assert [(e.text, e.done) for e in seen] == [("", False), ("abcd", False), ("abcd", True)]
    assert {(e.run_id, e.step_id, e.call_index, e.provider) for e in seen} == {("r", "s", 2, "p1")}


def test_a_voided_attempt_restarts_the_text() -> None:
    channel, clock, seen = LiveChannel(), Ticks(), []
    channel.subscribe(seen.append)
    output = coalescer(channel, clock)

    output.on_event("start", "p1", "")
    output.on_event("text", "p1", "half an ans")
    output.on_event("abort", "p1", "the stream broke off")
    clock.now = 1.0
    output.on_event("start", "p2", "")
    output.on_event("text", "p2", "whole")
    output.close()

    restarts = [e for e in seen if e.restarted]
    assert len(restarts) == 1 and restarts[0].text == ""
    assert (seen[-1].provider, seen[-1].text, seen[-1].done) == ("p2", "whole", True)


def test_a_new_attempt_after_a_complete_but_rejected_one_restarts_the_text() -> None:
    channel, clock, seen = LiveChannel(), Ticks(), []
    channel.subscribe(seen.append)
    output = coalescer(channel, clock)

    output.on_event("start", "p1", "")
    output.on_event("text", "p1", "not json")
    clock.now = 1.0
    output.on_event("start", "p2", "")

    assert (seen[-1].provider, seen[-1].text, seen[-1].restarted) == ("p2", "", True)


def test_a_late_listener_gets_the_text_so_far_of_calls_still_streaming() -> None:
    channel, clock = LiveChannel(), Ticks()
    output = coalescer(channel, clock)
    output.on_event("start", "p1", "")
    output.on_event("text", "p1", "half")
    clock.now = 0.2
    output.on_event("text", "p1", " an answer")

    late: list[ModelOutput] = []
    channel.subscribe(late.append, run_id="r")
    other_run: list[ModelOutput] = []
    channel.subscribe(other_run.append, run_id="other")
    assert [(e.text, e.done) for e in late] == [("half an answer", False)] and other_run == []

    output.close()
    after_the_end: list[ModelOutput] = []
    channel.subscribe(after_the_end.append)
    assert late[-1].done and after_the_end == []


async def test_text_held_back_by_the_interval_is_sent_while_the_stream_pauses() -> None:
    channel, clock, seen = LiveChannel(), Ticks(), []
    channel.subscribe(seen.append)
    output = coalescer(channel, clock)
    output.on_event("start", "p1", "")
    output.on_event("text", "p1", "said before the pause")
    assert [e.text for e in seen] == [""]  # within the interval: held back for now

    await until(lambda: len(seen) == 2, "the held-back text was sent")
    assert (seen[-1].text, seen[-1].done) == ("said before the pause", False)
    output.close()
    assert [e.done for e in seen] == [False, False, True]


def test_a_listener_of_another_run_hears_nothing_and_a_broken_one_harms_nothing() -> None:
    channel, clock, mine = LiveChannel(), Ticks(), []
    channel.subscribe(mine.append, run_id="other")

    def broken(event: ModelOutput) -> None:
        raise RuntimeError("viewer broke")

    channel.subscribe(broken)
    output = coalescer(channel, clock)
    output.on_event("start", "p1", "")
    output.close()

    assert mine == []


def step_context(store: RunStore, caller: RouterModelCaller, live: LiveChannel) -> StepContext:
    services = StepServices(
        journal=StoreJournal(store),
        budget=RunBudget(max_llm_calls=10, token_budget=100_000),
        ask=_never_asked,
        emit_domain=lambda name, payload, step: None,
        model=caller,
        live=live,
    )
    return StepContext(
        run_id="run-1",
        spec=StepSpec(id="judge", uses="judge"),
        iteration=0,
        attempt=1,
        services=services,
        upstream={},
        run_inputs={},
    )


async def _never_asked(*args: Any) -> Any:
    raise AssertionError("no interrupt in this test")


async def test_a_step_model_call_streams_live_and_journals_only_the_answer(
    tmp_path: Path, fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"first": {"fault": "cut"}}})
    config = make_config(
        [
            provider_entry(fault_server, "first", weight=1000.0),
            provider_entry(fault_server, "spare", weight=0.001),
        ]
    )
    caller = RouterModelCaller(make_router(config))
    live, seen = LiveChannel(), []
    live.subscribe(seen.append)
    with RunStore(tmp_path / "runs.sqlite3") as store:
        response = await step_context(store, caller, live).llm(request())

        assert response.provider == "spare"
        assert response.parsed == Verdict(verdict="remote:verify", score=0.9)
        assert seen[-1].done and seen[-1].provider == "spare"
        assert json.loads(seen[-1].text) == {"verdict": "remote:verify", "score": 0.9}
        assert any(e.restarted for e in seen), "the cut stream of 'first' was voided"
        journaled = store.journal_get("run-1", "judge", 0, 0)
        assert journaled is not None and journaled.payload["provider"] == "spare"
        assert journaled.payload["content"] == response.content

        seen.clear()
        fault_server.clear_requests()
        replayed = await step_context(store, caller, live).llm(request())

    assert replayed.content == response.content
    assert seen == [] and fault_server.requests == []
