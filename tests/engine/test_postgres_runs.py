"""Whole runs on the PostgreSQL store, both engines: a run that waits for a person and resumes
in another store handle (another process's view), LangGraph's checkpoints in the same
database, the model call made once."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from engine.context import InterruptAnswer
from engine.events import Log
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.protocol import RunContext
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.store.postgres import PostgresRunStore
from plumbing.postgres import DatabaseError
from tests.engine.asking_steps import ASK_AFTER_A_CALL, CALLS
from tests.engine.kahn_helpers import TEST_REGISTRY, step, workflow


@pytest.mark.parametrize("engine_class", [KahnEngine, LangGraphEngine])
def test_a_waiting_run_is_answered_and_resumed_from_another_handle(
    engine_class: type[KahnEngine] | type[LangGraphEngine], pg_database: str
) -> None:
    wf = workflow(
        step("first"),
        step("ask", ASK_AFTER_A_CALL, depends_on=["first"]),
        step("last", depends_on=["ask"]),
        name="pg_flow",
    )
    with PostgresRunStore(pg_database) as store:
        waiting = asyncio.run(
            engine_class(registry=TEST_REGISTRY).execute(wf, RunContext(store=store))
        )
    assert waiting.status == RunStatus.WAITING
    run_id = waiting.run_id

    with PostgresRunStore(pg_database) as person:
        (pending,) = person.pending_interrupts(run_id)
        person.record_answer(pending.interrupt_id, InterruptAnswer(action="approve"))

    with PostgresRunStore(pg_database) as store:
        done = asyncio.run(
            engine_class(registry=TEST_REGISTRY).resume(run_id, RunContext(store=store))
        )
        results = store.step_results(run_id)
        kinds = [e.kind for e in store.events(run_id)]
    assert done.status == RunStatus.COMPLETED
    assert {k: r.status for k, r in results.items()} == dict.fromkeys(
        ["first", "ask", "last"], StepStatus.SUCCEEDED
    )
    assert results["ask"].outputs == {"model": "the model's answer", "answer": "approve"}
    assert CALLS[run_id] == 1  # the resumed step's model call came from the journal
    assert kinds.count("step_finished") == 3 and kinds[-1] == "run_finished"

    with psycopg.connect(pg_database) as conn:
        row = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (run_id,)
        ).fetchone()
    assert row is not None and (row[0] > 0) == (engine_class is LangGraphEngine)


def test_a_langgraph_run_reads_its_history_from_the_database(pg_database: str) -> None:
    wf = workflow(step("a"), step("b", depends_on=["a"]), name="pg_history")
    engine = LangGraphEngine(registry=TEST_REGISTRY)
    with PostgresRunStore(pg_database) as store:
        result = asyncio.run(engine.execute(wf, RunContext(store=store)))
        history = asyncio.run(engine.history(result.run_id, store))
    assert engine.checkpoint_file(store) is None
    assert [entry.changed for entry in history if entry.changed][-2:] == [
        {"a": "SUCCEEDED"},
        {"b": "SUCCEEDED"},
    ]
    assert not history[-1].checkpoint_id.startswith("seq:")  # LangGraph's own checkpoints


WF = WorkflowDefinition(name="lost", steps=[StepSpec(id="a", uses="demo.echo")])


def test_a_batch_whose_connection_is_lost_before_its_commit_is_one_line_and_keeps_nothing(
    pg_database: str,
) -> None:
    """The server ends the batch's connection (an administrator, a restart) before it commits:
    the batch fails as the store's one-line error, none of its writes is kept, and the next
    write goes through on a new connection."""
    with PostgresRunStore(pg_database) as store:
        run_id = store.create_run(WF, {}, "kahn", "test")
        with pytest.raises(DatabaseError) as lost, store.batch():
            store.append(Log(run_id=run_id, message="lost"))
            backend = store._connection().info.backend_pid
            with psycopg.connect(pg_database, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        assert "\n" not in str(lost.value) and "cannot use the run store" in str(lost.value)
        store.append(Log(run_id=run_id, message="after"))
        assert [e.message for e in store.events(run_id)] == ["after"]  # type: ignore[union-attr]
