"""Copying runs between an SQLite workspace and PostgreSQL, both ways (engine/store/copy.py):
everything read back the same, a second copy changes nothing, a run that went on elsewhere is
never overwritten, and a copied WAITING run resumes in its new home."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.context import InterruptAnswer, InterruptRequest, JournalEntry
from engine.events import Log, StepStarted
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.store import BaseRunStore, InterruptRecord, StepResult, UnknownRun
from engine.store.copy import copy_runs
from tests.engine.asking_steps import ASK_AFTER_A_CALL, CALLS
from tests.engine.kahn_helpers import TEST_REGISTRY, step, workflow
from tests.stores import store_opener

WF = WorkflowDefinition(
    name="copy_test",
    inputs={"topic": {"type": "string"}},
    steps=[StepSpec(id="a", uses="demo.echo"), StepSpec(id="b", uses="demo.echo")],
)
DIRECTIONS = pytest.mark.parametrize(
    "source_kind, target_kind", [("sqlite", "postgres"), ("postgres", "sqlite")]
)


def _fill(store: BaseRunStore) -> list[str]:
    """Two runs holding every kind of stored thing: loops, journal, answers, engine state."""
    done = store.create_run(WF, {"topic": "copies"}, "kahn", "acyclic", run_id="r-done")
    store.append(StepStarted(run_id=done, step_id="a"))
    for iteration in range(3):
        store.save_step(
            done,
            StepResult(
                step_id="a",
                status=StepStatus.SUCCEEDED,
                iteration=iteration,
                outputs={"pass": iteration, "nested": {"z": 1, "a": [1.5, None]}},
                routed_by=["b"] if iteration else [],
                runs=iteration + 1,
            ),
        )
    store.save_step(done, StepResult(step_id="b", status=StepStatus.RUNNING, runs=1))
    for index in range(3):
        store.journal_put(done, "a", 1, index, JournalEntry(kind="llm", payload={"n": index}))
    store.journal_put(done, "b", 0, 0, JournalEntry(kind="retrieve", payload=None))
    store.add_interrupt(
        InterruptRecord(
            interrupt_id="i-1",
            run_id=done,
            step_id="a",
            request=InterruptRequest(prompt="ok?", options=["approve", "reject"]),
        )
    )
    store.record_answer("i-1", InterruptAnswer(action="reject", note="not yet"))
    store.save_engine_state(done, {"step_runs": 4, "detour": None})
    for index in range(5):
        store.append(Log(run_id=done, message=f"line {index} ✓"))
    store.set_status(done, RunStatus.COMPLETED, "all done", {"answer": 42})
    child = store.create_run(
        WF, {}, "langgraph", "forked", run_id="r-child", parent=done, forked_at="a"
    )
    store.append(Log(run_id=child, message="still running"))
    return [done, child]


def _everything(store: BaseRunStore, run_id: str) -> dict[str, Any]:
    return {
        "run": store.get_run(run_id).model_dump(exclude={"owner", "owner_status"}),
        "events": store.events(run_id),
        "steps": store.step_results(run_id),
        "journal": store.journal_of(run_id),
        "interrupts": store.interrupts(run_id),
    }


@DIRECTIONS
def test_every_part_of_every_run_is_copied_and_a_second_copy_changes_nothing(
    source_kind: str, target_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with store_opener(source_kind, request, tmp_path)() as source:
        runs = _fill(source)
        with store_opener(target_kind, request, tmp_path)() as target:
            first = list(copy_runs(source, target))
            assert [(c.run_id, c.outcome) for c in first] == [
                ("r-done", "copied"),
                ("r-child", "copied"),
            ]
            for run_id in runs:
                assert _everything(target, run_id) == _everything(source, run_id)
            assert target.get_run("r-child").stopped  # its process is this machine's, not there
            again = list(copy_runs(source, target))
            assert [(c.outcome, c.events) for c in again] == [("present", 0), ("present", 0)]
            assert [_everything(target, r) for r in runs] == [_everything(source, r) for r in runs]
            assert target.append(Log(run_id="r-child", message="next")).seq == 2


@DIRECTIONS
def test_a_run_that_went_on_in_the_target_is_not_overwritten(
    source_kind: str, target_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with store_opener(source_kind, request, tmp_path)() as source:
        _fill(source)
        with store_opener(target_kind, request, tmp_path)() as target:
            list(copy_runs(source, target, ["r-child"]))
            target.append(Log(run_id="r-child", message="went on there"))
            kept = _everything(target, "r-child")
            outcomes = [(c.run_id, c.outcome) for c in copy_runs(source, target)]
            assert outcomes == [("r-done", "copied"), ("r-child", "differs")]
            assert _everything(target, "r-child") == kept
            with pytest.raises(UnknownRun):
                list(copy_runs(source, target, ["nope"]))


async def test_a_waiting_run_copied_to_postgres_resumes_there_without_calling_again(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    wf = workflow(step("ask", ASK_AFTER_A_CALL), step("after", depends_on=["ask"]), name="moved")
    with store_opener("sqlite", request, tmp_path)() as local:
        waiting = await KahnEngine(registry=TEST_REGISTRY).execute(wf, RunContext(store=local))
        assert waiting.status == RunStatus.WAITING
        with store_opener("postgres", request, tmp_path)() as server:
            assert [c.outcome for c in copy_runs(local, server, [waiting.run_id])] == ["copied"]
            (pending,) = server.pending_interrupts(waiting.run_id)
            server.record_answer(pending.interrupt_id, InterruptAnswer(action="approve"))
            done = await KahnEngine(registry=TEST_REGISTRY).resume(
                waiting.run_id, RunContext(store=server)
            )
            assert done.status == RunStatus.COMPLETED
            assert server.step_results(waiting.run_id)["ask"].outputs["answer"] == "approve"
    assert CALLS[waiting.run_id] == 1
