"""Run leases with a fencing epoch (engine/store/lease.py), and the NOTIFY that announces
committed events (engine/store/postgres.py) — on real SQLite files and a real PostgreSQL."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest

from engine.context import InterruptRequest, JournalEntry
from engine.events import Log
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.store import InterruptRecord, LeaseLost, OwnRow, StepResult, UnknownRun
from tests.stores import DURABLE, OpenStore

WF = WorkflowDefinition(name="lease_test", steps=[StepSpec(id="a", uses="demo.echo")])
durable = pytest.mark.parametrize("open_store", DURABLE, indirect=True)
postgres = pytest.mark.parametrize("open_store", ["postgres"], indirect=True)


@durable
def test_each_claim_takes_the_next_epoch(open_store: OpenStore) -> None:
    first, second = open_store(), open_store()
    run_id = first.create_run(WF, {}, "kahn", "test")
    assert first.claim(run_id) == 1
    assert second.claim(run_id) == 2
    assert first.claim(run_id) == 3
    with pytest.raises(UnknownRun):
        first.claim("nope")


@durable
def test_a_write_with_a_stale_epoch_raises_and_commits_nothing(open_store: OpenStore) -> None:
    old, new = open_store(), open_store()
    run_id = old.create_run(WF, {}, "kahn", "test")
    old.claim(run_id)
    old.append(Log(run_id=run_id, message="before the takeover"))
    assert new.claim(run_id) == 2

    with pytest.raises(LeaseLost) as lost:
        with old.batch():
            old.append(Log(run_id=run_id, message="lost"))
            old.save_step(run_id, StepResult(step_id="a", status=StepStatus.SUCCEEDED))
    assert str(lost.value) == (
        f"run {run_id} was taken over (this process held lease epoch 1; epoch 2 holds it now)"
        " — nothing more is written for it here"
    )
    with pytest.raises(LeaseLost), old.batch():  # a step's row first in its transaction
        old.save_step(run_id, StepResult(step_id="a", status=StepStatus.RUNNING))
    running = StepResult(step_id="a", status=StepStatus.RUNNING).model_dump(mode="json")
    with pytest.raises(LeaseLost), old.batch():  # the step runner's own row, from its fields
        old.save_row(run_id, OwnRow(running, StepStatus.RUNNING))
    for write in (
        lambda: old.append(Log(run_id=run_id, message="lost too")),
        lambda: old.append_new(Log, run_id=run_id, message="lost as well"),
        lambda: old.add_interrupt(
            InterruptRecord(
                interrupt_id="i", run_id=run_id, step_id="a", request=InterruptRequest(prompt="?")
            )
        ),
        lambda: old.save_step(run_id, StepResult(step_id="a", status=StepStatus.FAILED)),
        lambda: old.save_row(run_id, OwnRow(running, StepStatus.RUNNING)),
        lambda: old.save_alike(run_id, StepResult(step_id="a", status=StepStatus.PENDING), ["b"]),
        lambda: old.journal_put(run_id, "a", 0, 0, JournalEntry(kind="llm", payload="x")),
        lambda: old.save_engine_state(run_id, {"step_runs": 9}),
        lambda: old.set_status(run_id, RunStatus.FAILED, "stale"),
        lambda: old.claim_owner(run_id),
    ):
        with pytest.raises(LeaseLost):
            write()

    assert new.append(Log(run_id=run_id, message="after")).seq == 2
    reader = open_store()
    assert [e.message for e in reader.events(run_id)] == ["before the takeover", "after"]  # type: ignore[union-attr]
    assert reader.step_results(run_id) == {}
    assert reader.journal_get(run_id, "a", 0, 0) is None
    assert reader.interrupts(run_id) == []
    record = reader.get_run(run_id)
    assert (record.status, record.engine_state) == (RunStatus.RUNNING, {})


@durable
def test_a_store_that_never_claimed_a_run_writes_it_unchecked(open_store: OpenStore) -> None:
    holder, person = open_store(), open_store()
    run_id = holder.create_run(WF, {}, "kahn", "test")
    holder.claim(run_id)
    person.append(Log(run_id=run_id, message="a note"))
    assert holder.append(Log(run_id=run_id, message="the holder")).seq == 2


@postgres
def test_a_claim_waits_for_the_holders_open_transaction(
    open_store: OpenStore, pg_database: str
) -> None:
    """The epoch is read FOR SHARE: a takeover cannot slip between the holder's check and
    its commit. The claim waits (seen in pg_stat_activity), the holder's batch commits whole,
    then the claim returns the next epoch and the holder's next write is refused."""
    holder, taker = open_store(), open_store()
    run_id = holder.create_run(WF, {}, "kahn", "test")
    holder.claim(run_id)
    claimed: list[int] = []
    with holder.batch():
        holder.append(Log(run_id=run_id, message="in the holder's transaction"))
        thread = threading.Thread(target=lambda: claimed.append(taker.claim(run_id)))
        thread.start()
        with psycopg.connect(pg_database, autocommit=True) as watcher:
            for _ in range(20_000):
                waiting = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND datname = current_database()"
                ).fetchone()
                if waiting is not None and waiting[0] == 1:
                    break
            else:
                raise AssertionError("the claim never waited for the holder's transaction")
        assert claimed == []
    thread.join(30)
    assert claimed == [2]
    assert [e.seq for e in holder.events(run_id)] == [1]
    with pytest.raises(LeaseLost):
        holder.append(Log(run_id=run_id, message="too late"))


def _notifications(conn: psycopg.Connection[Any]) -> list[str]:
    """The notifications delivered so far (the connection has sent a query since)."""
    conn.execute("SELECT 1")
    return [n.payload for n in conn.notifies(timeout=0)]


@postgres
def test_committed_events_are_notified_once_per_run_and_transaction(
    open_store: OpenStore, pg_database: str
) -> None:
    from engine.store.postgres import EVENTS_CHANNEL

    store = open_store()
    run_id = store.create_run(WF, {}, "kahn", "test")
    other = store.create_run(WF, {}, "kahn", "test")
    with psycopg.connect(pg_database, autocommit=True) as listener:
        listener.execute(f"LISTEN {EVENTS_CHANNEL}")
        with store.batch():
            for index in range(3):
                store.append(Log(run_id=run_id, message=str(index)))
            store.append(Log(run_id=other, message="x"))
            assert _notifications(listener) == []  # nothing before the commit
        assert sorted(_notifications(listener)) == sorted([f"{run_id} 3", f"{other} 1"])

        with pytest.raises(RuntimeError):
            with store.batch():
                store.append(Log(run_id=run_id, message="rolled back"))
                raise RuntimeError("boom")
        store.save_step(run_id, StepResult(step_id="a", status=StepStatus.SUCCEEDED))
        assert _notifications(listener) == []  # a rolled-back batch, a batch without events
        store.append(Log(run_id=run_id, message="next"))
        assert _notifications(listener) == [f"{run_id} 4"]


@durable
async def test_a_run_owned_by_another_live_process_resumes_only_under_a_lease(
    open_store: OpenStore,
) -> None:
    """A RUNNING run whose recorded owner is another live process (here: this test's parent)
    is refused to a plain resume, and resumed by a store that claimed its lease, which fences
    that owner out (a worker taking over a run)."""
    import os
    import socket

    import engine.demo_steps  # noqa: F401 - registers demo.echo
    from engine.kahn import KahnEngine
    from engine.protocol import RunContext
    from engine.store import RunOwned
    from engine.store.ownership import RunOwner, _proc_start

    store = open_store()
    run_id = store.create_run(WF, {}, "kahn", "test")
    parent = os.getppid()
    other = RunOwner(
        host=socket.gethostname(), pid=parent, token="another", proc_start=_proc_start(parent)[0]
    )
    with store.batch():
        store._write_owner(run_id, other)
    assert store.get_run(run_id).owner_status == "alive"
    with pytest.raises(RunOwned):
        await KahnEngine().resume(run_id, RunContext(store=store))
    leased = open_store()
    leased.claim(run_id)
    result = await KahnEngine().resume(run_id, RunContext(store=leased))
    assert result.status == RunStatus.COMPLETED
