"""The words of a step's two lines and of an output summary, as every surface shows them."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from engine.event_lines import EventLine, describe, summarize
from engine.events import StepFinished, StepStarted


@pytest.mark.parametrize(
    ("iteration", "attempt", "text"),
    [
        (0, 1, "plan started"),
        (1, 1, "plan started (iteration 1)"),
        (0, 2, "plan started (attempt 2)"),
        (2, 3, "plan started (iteration 2, attempt 3)"),
    ],
)
def test_a_started_step_names_its_iteration_and_attempt_past_the_first(
    iteration: int, attempt: int, text: str
) -> None:
    event = StepStarted(run_id="r", step_id="plan", iteration=iteration, attempt=attempt)
    assert describe(event) == EventLine(text, status="RUNNING")


def test_a_finished_step_says_what_it_cost_and_produced() -> None:
    plain = StepFinished(run_id="r", step_id="s1", duration_s=0.004, tokens=0)
    assert describe(plain) == EventLine(
        "s1 succeeded in 0.00s, 0 tokens", status="SUCCEEDED", outputs="{}"
    )
    busy = StepFinished(
        run_id="r",
        step_id="plan",
        duration_s=1.5,
        llm_calls=3,
        replayed_calls=1,
        fallback_calls=2,
        tokens=40,
        providers=["openai", "local"],
        outputs={"topic": "owls", "n": 2},
    )
    assert describe(busy) == EventLine(
        "plan succeeded in 1.50s, 3 calls, 1 replayed, 2 from the built-in fallback, 40 tokens"
        " via openai, local",
        level="warning",
        status="SUCCEEDED",
        outputs='{"topic": "owls", "n": 2}',
    )
    one = StepFinished(run_id="r", step_id="s", duration_s=1, llm_calls=1, tokens=5)
    assert describe(one).text == "s succeeded in 1.00s, 1 call, 5 tokens"
    large = StepFinished(run_id="r", step_id="s", outputs={"text": "x" * 100})
    assert describe(large).outputs == summarize({"text": "x" * 100}, 60)
    assert len(describe(large).outputs) == 60


@pytest.mark.parametrize(
    ("value", "summary"),
    [
        ({}, "{}"),
        ([], "[]"),
        (0, "0"),
        ("", '""'),
        (None, "null"),
        ({"a": [1, "é"]}, '{"a": [1, "é"]}'),
        ({"path": PurePosixPath("/tmp/x")}, '{"path": "/tmp/x"}'),
    ],
)
def test_a_summary_is_the_values_json_on_one_line(value: object, summary: str) -> None:
    assert summarize(value) == summary


def test_a_summary_longer_than_its_width_is_cut_with_an_ellipsis() -> None:
    assert summarize("abcdef", 8) == '"abcdef"'
    assert summarize("abcdefg", 8) == '"abcdef…'
    assert len(summarize(list(range(100)))) == 80
