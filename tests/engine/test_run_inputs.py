"""Run inputs are converted and checked against their declarations before a run exists:
the type, the choices, min and max, a string's max_length, and whole numbers within the range CEL computes exactly.
Every refusal is one line naming the input and the value."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.run_inputs import LARGEST_INT, InputError, parse_assignments, resolve_inputs
from engine.spec import InputSpec, StepSpec, WorkflowDefinition
from engine.store import RunStore
from tests.cli.test_engine_cli import workbench
from workflows import WORKFLOWS_DIR

WF = WorkflowDefinition(
    name="bounded",
    inputs={
        "rounds": InputSpec(type="int", default=4, min=1, max=6),
        "ratio": InputSpec(type="float", default=0.5, min=0, max=1),
        "mode": InputSpec(type="string", default="fast", choices=["fast", "deep"]),
        "note": InputSpec(type="string", default="", max_length=5),
        "count": InputSpec(type="int", default=1),
    },
    steps=[StepSpec(id="a", uses="demo.echo")],
)


@pytest.mark.parametrize(
    "given, message",
    [
        ({"rounds": "-3"}, "input 'rounds' must be at least 1, got -3"),
        ({"rounds": "7"}, "input 'rounds' must be at most 6, got 7"),
        ({"ratio": "1.5"}, "input 'ratio' must be at most 1, got 1.5"),
        ({"ratio": "nan"}, "input 'ratio' must be a number, got 'nan'"),
        ({"ratio": "inf"}, "input 'ratio' must be a number, got 'inf'"),
        ({"mode": "slow"}, "input 'mode' must be one of fast, deep, got 'slow'"),
        (
            {"note": "x" * 1_234},
            "input 'note' must be at most 5 characters long, got 1,234 characters",
        ),
        (
            {"count": "9" * 26},
            f"input 'count' must be a whole number between -{LARGEST_INT} and {LARGEST_INT},"
            f" got '{'9' * 26}'; pass a smaller number",
        ),
        (
            {"count": 10**30},
            f"input 'count' must be a whole number between -{LARGEST_INT} and {LARGEST_INT},"
            f" got {10**30}; pass a smaller number",
        ),
    ],
)
def test_values_outside_their_declared_bounds_are_refused_in_one_line(
    given: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError) as refused:
        resolve_inputs(WF, given)
    assert str(refused.value) == message


def test_a_lone_surrogate_anywhere_in_a_value_is_refused_in_one_line() -> None:
    """As an argument's byte that is not UTF-8 arrives (surrogateescape), and nested in a value
    a server's JSON decoded from a ``\\udce9`` escape."""
    wf = WorkflowDefinition(
        name="texts",
        inputs={"q": InputSpec(type="string"), "d": InputSpec(type="dict", default=None)},
        steps=[StepSpec(id="a", uses="demo.echo")],
    )
    message = "input '{}' is not UTF-8 text (it holds a byte no character is made of)"
    with pytest.raises(InputError, match=re.escape(message.format("q"))):
        resolve_inputs(wf, {"q": "caf\udce9"})
    with pytest.raises(InputError, match=re.escape(message.format("d"))):
        resolve_inputs(wf, {"q": "ok", "d": {"notes": ["fine", "caf\udce9"]}})


def test_values_within_their_bounds_are_converted() -> None:
    assert resolve_inputs(WF, parse_assignments(["rounds=1", "ratio=1", "count=-12"])) == {
        "rounds": 1,
        "ratio": 1.0,
        "mode": "fast",
        "note": "",
        "count": -12,
    }
    assert resolve_inputs(WF, {"count": LARGEST_INT})["count"] == LARGEST_INT


@pytest.mark.parametrize("value", ["-3", "0", "9" * 26])
def test_a_bad_max_rounds_is_refused_before_a_run_exists(tmp_path: Path, value: str) -> None:
    done = workbench(
        tmp_path,
        "run",
        str(WORKFLOWS_DIR / "deep_research.yaml"),
        "--headless",
        "--input",
        "query=asyncio",
        "--input",
        f"max_rounds={value}",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: input 'max_rounds' must be")
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert store.list_runs() == []


def test_json_a_run_cannot_store_and_a_value_given_twice_are_refused_in_one_line() -> None:
    """``NaN`` and ``Infinity`` are read by Python's JSON reader but a run's stored JSON holds
    none (the runs table and the events would disagree); a key or an input given twice would drop
    its first value unseen."""
    wf = WorkflowDefinition(
        name="json",
        inputs={"m": InputSpec(type="dict"), "xs": InputSpec(type="list")},
        steps=[StepSpec(id="a", uses="demo.echo")],
    )
    not_finite = "holds NaN or infinity, which a run cannot store; give a number or null instead"
    for given in (
        {"m": '{"a": NaN}'},
        {"xs": "[1, -Infinity]"},
        {"m": {"a": [1.0, float("inf")]}},  # as a server's JSON decodes it
    ):
        with pytest.raises(InputError) as refused:
            resolve_inputs(wf, given)
        assert str(refused.value) == f"input '{next(iter(given))}' {not_finite}"
    with pytest.raises(InputError) as twice:
        resolve_inputs(wf, {"m": '{"a": 1, "b": {"c": 2, "c": 3}}'})
    assert str(twice.value) == "input 'm' writes the key 'c' twice; write it once"
    with pytest.raises(InputError) as repeated:
        parse_assignments(["m={}", "xs=[]", "m={}"])
    assert str(repeated.value) == "--input m is given twice; give it once"
    assert resolve_inputs(wf, {"m": '{"a": 1.5, "b": null}'}) == {
        "m": {"a": 1.5, "b": None},
        "xs": None,
    }
