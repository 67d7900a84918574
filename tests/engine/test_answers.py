"""Answers reach the right person and the right interrupt: addressed answers for resume,
and the demo workflows' tie-breaker, which always leaves the choice to a person."""

from __future__ import annotations

import asyncio

import pytest

from engine.context import InterruptAnswer, InterruptRequest
from engine.demo_steps import demo_tie_breaker
from engine.events import InterruptRaised, RouteDecided
from engine.interrupt_answers import AnswerAddressError, address_answers
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow
from engine.protocol import RunContext
from engine.states import RunStatus
from engine.store import InMemoryRunStore, InterruptRecord
from tests.engine.langgraph_cases import WORKFLOWS

APPROVE = InterruptAnswer(action="approve")
REJECT = InterruptAnswer(action="reject")


def pending(*steps: str) -> list[InterruptRecord]:
    return [
        InterruptRecord(
            interrupt_id=f"run:{step}:0:0",
            run_id="run",
            step_id=step,
            iteration=0,
            request=InterruptRequest(kind="approval", prompt="?"),
            created_ts=0.0,
        )
        for step in steps
    ]


def test_answers_are_addressed_by_step_or_interrupt_id() -> None:
    waiting = pending("left", "right")
    assert address_answers(waiting, [("left", APPROVE), ("run:right:0:0", REJECT)]) == {
        "run:left:0:0": APPROVE,
        "run:right:0:0": REJECT,
    }


def test_one_unaddressed_answer_is_for_the_one_pending_interrupt_only() -> None:
    assert address_answers(pending("only"), [(None, APPROVE)]) == {"run:only:0:0": APPROVE}
    with pytest.raises(AnswerAddressError, match="2 interrupts are pending: left .*, right"):
        address_answers(pending("left", "right"), [(None, APPROVE)])


@pytest.mark.parametrize(
    "given, message",
    [
        ([("nope", APPROVE)], "no pending interrupt is 'nope'; pending: left"),
        ([("left", APPROVE), ("left", REJECT)], "answered twice"),
    ],
)
def test_a_wrong_address_says_what_is_pending(given, message) -> None:
    with pytest.raises(AnswerAddressError, match=message):
        address_answers(pending("left"), given)


@pytest.mark.parametrize("engine", [KahnEngine, LangGraphEngine])
def test_the_demo_tie_breaker_leaves_the_choice_to_a_person(engine) -> None:
    asked: list[InterruptRaised] = []

    async def default_answer(raised: InterruptRaised, request: InterruptRequest):
        asked.append(raised)
        return request.default

    wf = load_workflow(WORKFLOWS / "demo_tiebreak.yaml")
    store = InMemoryRunStore()
    context = RunContext(store=store, tie_breaker=demo_tie_breaker, responder=default_answer)
    result = asyncio.run(engine().execute(wf, context))
    assert result.status == RunStatus.COMPLETED
    assert [(e.step_id, e.interrupt_kind) for e in asked] == [("review", "tie_breaker")]
    assert asked[0].payload["suggestion"] == "revise" and asked[0].payload["confidence"] == 0.5
    (route,) = [e for e in store.events(result.run_id) if isinstance(e, RouteDecided)]
    assert (route.signal.next_step_id, route.signal.tie_breaker_used) == ("publish", True)
