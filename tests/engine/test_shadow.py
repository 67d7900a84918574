"""Shadow mode: both engines on the same inputs, the second replaying the first's journal."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine import demo_steps  # noqa: F401 - registers the demo steps
from engine.context import InterruptAnswer, InterruptRequest, JournalEntry, StepContext
from engine.events import InterruptRaised, StepFinished
from engine.journal import RUN_EFFECT, StoreJournal
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow, load_workflow_text
from engine.protocol import RunContext
from engine.shadow import run_shadow
from engine.states import RunStatus
from engine.steps import REGISTRY, AnyInput, AnyOutput
from engine.store import InMemoryRunStore
from tests.engine.langgraph_cases import demo_workflows

WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"
_TICKS = itertools.count()


async def unjournaled_clock(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """A step that reads the outside world without the journal: its two runs differ."""
    return AnyOutput(tick=next(_TICKS))


if "test.unjournaled_clock" not in REGISTRY:
    REGISTRY.register("test.unjournaled_clock", unjournaled_clock)

DIVERGENT = {
    "name": "divergent",
    "steps": [
        {"id": "clock", "uses": "test.unjournaled_clock"},
        {"id": "after", "uses": "demo.gather", "depends_on": ["clock"]},
    ],
}


def engines() -> dict[str, object]:
    return {"kahn": KahnEngine(), "langgraph": LangGraphEngine()}


@pytest.mark.parametrize("first", ["kahn", "langgraph"])
@pytest.mark.parametrize("path", demo_workflows(), ids=lambda p: p.stem)
def test_every_demo_workflow_conforms_in_shadow(path: Path, first: str) -> None:
    wf = load_workflow(path)
    store = InMemoryRunStore()
    asked: list[str] = []

    async def responder(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
        asked.append(raised.run_id)
        return request.default or InterruptAnswer(action="approve", automatic=True)

    result = asyncio.run(
        run_shadow(wf, RunContext(store=store, responder=responder), first, engines())
    )
    assert result.conforms, result.report.render()
    assert result.second is not None
    assert {result.first.engine, result.second.engine} == {"kahn", "langgraph"}
    assert set(asked) <= {result.first.run_id}, (
        "the second engine asked a person instead of replaying"
    )


def test_the_second_engine_replays_the_first_ones_model_answers() -> None:
    wf = load_workflow(WORKFLOWS / "microloop.yaml")
    store = InMemoryRunStore()
    result = asyncio.run(run_shadow(wf, RunContext(store=store), "langgraph", engines()))
    assert result.conforms
    assert result.second is not None
    first = [e for e in store.events(result.first.run_id) if isinstance(e, StepFinished)]
    second = [e for e in store.events(result.second.run_id) if isinstance(e, StepFinished)]
    assert sum(e.replayed_calls for e in first) == 0
    assert sum(e.replayed_calls for e in second) == len(second) - 1  # publish makes no call


def test_a_difference_is_reported_canonically() -> None:
    wf = load_workflow_text(json.dumps(DIVERGENT), source="divergent.yaml")
    store = InMemoryRunStore()
    result = asyncio.run(run_shadow(wf, RunContext(store=store), "kahn", engines()))
    assert not result.conforms
    where = [d.where for d in result.report.differences]
    assert "steps.clock" in where
    assert "steps.after" not in where, (
        "the gather step sees the same upstream steps on both engines"
    )
    text = result.report.render()
    assert "kahn" in text and "langgraph" in text and "difference" in text


def test_a_waiting_first_run_is_not_compared() -> None:
    wf = load_workflow(WORKFLOWS / "approval.yaml")
    store = InMemoryRunStore()
    result = asyncio.run(run_shadow(wf, RunContext(store=store), "kahn", engines()))
    assert result.first.status == RunStatus.WAITING
    assert result.second is None and not result.conforms
    assert "WAITING" in result.note


def test_cli_shadow_exits_zero_when_identical_and_six_on_a_difference(tmp_path: Path) -> None:
    from tui.cli import cli

    runner = CliRunner()
    same = runner.invoke(
        cli,
        [
            "--workspace",
            str(tmp_path),
            "run",
            str(WORKFLOWS / "microloop.yaml"),
            "--engine",
            "shadow",
            "--headless",
        ],
    )
    assert same.exit_code == 0, same.output
    assert "identical" in same.output

    divergent = tmp_path / "divergent.yaml"
    divergent.write_text(json.dumps(DIVERGENT), encoding="utf-8")
    differs = runner.invoke(
        cli,
        ["--workspace", str(tmp_path), "run", str(divergent), "--engine", "shadow", "--headless"],
    )
    assert differs.exit_code == 6, differs.output
    assert "steps.clock" in differs.output


def test_a_borrowed_answer_speaks_of_the_borrowing_run_and_a_run_effect_is_never_lent() -> None:
    store = InMemoryRunStore()
    wf = load_workflow(WORKFLOWS / "microloop.yaml")
    first = store.create_run(wf, {}, "kahn", "test")
    second = store.create_run(wf, {}, "langgraph", "shadow")
    answer = {"content": f"saved runs/{first}/note.md", "ids": [f"{first}:note:0:1"]}
    own = StoreJournal(store)
    own.put(first, "note", 0, 0, JournalEntry(kind="llm", payload=answer))
    own.put(first, "note", 0, 1, JournalEntry(kind=RUN_EFFECT, payload={"saved": first}))
    journal = StoreJournal(store, replay_from=first)
    rebased = {"content": f"saved runs/{second}/note.md", "ids": [f"{second}:note:0:1"]}
    assert journal.get(second, "note", 0, 0) == JournalEntry(kind="llm", payload=rebased)
    assert store.journal_get(second, "note", 0, 0) == JournalEntry(kind="llm", payload=rebased)
    assert journal.get(second, "note", 0, 1) is None  # the second run makes it itself
    assert journal.get(first, "note", 0, 1) == JournalEntry(
        kind=RUN_EFFECT, payload={"saved": first}
    )
