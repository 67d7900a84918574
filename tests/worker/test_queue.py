"""The run queue on a real PostgreSQL: a run and its job are created together, queued once,
answered and queued again in one transaction, cancelled whether queued or not held."""

from __future__ import annotations

import pytest

from engine.context import InterruptAnswer
from engine.run_inputs import InputError
from engine.spec import InputSpec
from engine.states import RunStatus
from engine.store.postgres import PostgresRunStore
from tests.engine.kahn_helpers import step, workflow
from tui.worker.queue import (
    QUEUED_REASON,
    NotQueueable,
    answer_run,
    cancel_run,
    enqueue_resume,
    enqueue_run,
    run_job,
)

FLOW = workflow(step("a"), step("b", depends_on=["a"]), name="queued_flow")


def test_a_queued_run_waits_for_a_worker_with_one_job(pg_database: str) -> None:
    with PostgresRunStore(pg_database) as store:
        run_id = enqueue_run(store, FLOW, {})
        record = store.get_run(run_id)
        assert (record.status, record.reason) == (RunStatus.WAITING, QUEUED_REASON)
        assert record.engine == "kahn"
        assert run_job(store, run_id) == "queued"
        assert enqueue_resume(store, run_id) is False  # one job per run at a time


def test_a_wrong_input_stores_nothing(pg_database: str) -> None:
    wf = workflow(step("a"), name="with_input").model_copy(
        update={"inputs": {"n": InputSpec(type="int", required=True)}}
    )
    with PostgresRunStore(pg_database) as store:
        with pytest.raises(InputError):
            enqueue_run(store, wf, {"n": "many"})
        assert store.list_runs() == []


def test_cancelling_a_queued_run_takes_it_off_the_queue(pg_database: str) -> None:
    with PostgresRunStore(pg_database, pool_size=1) as store:  # the batch holds its connection
        run_id = enqueue_run(store, FLOW, {})
        assert cancel_run(store, run_id) == "dequeued"
        assert store.get_run(run_id).status == RunStatus.CANCELLED
        assert run_job(store, run_id) is None
        assert [e.kind for e in store.events(run_id)] == ["run_finished"]
        with pytest.raises(NotQueueable):
            enqueue_resume(store, run_id)
        with pytest.raises(NotQueueable):
            cancel_run(store, run_id)


def test_an_answer_is_recorded_and_the_run_queued_in_one_transaction(pg_database: str) -> None:
    from engine.context import InterruptRequest
    from engine.store import InterruptRecord

    with PostgresRunStore(pg_database) as store:
        run_id = enqueue_run(store, FLOW, {})
        record = InterruptRecord(
            interrupt_id="i1",
            run_id=run_id,
            step_id="a",
            iteration=0,
            request=InterruptRequest(prompt="Go on?"),
            created_ts=1.0,
        )
        store.add_interrupt(record)
        with pytest.raises(LookupError):
            answer_run(store, "nope", InterruptAnswer(action="approve"))
        answered = answer_run(store, "i1", InterruptAnswer(action="approve"))
        assert answered.status == "answered"
        assert run_job(store, run_id) == "queued"  # still one job
