"""Losing a worker: ``kill -9`` mid-run and another worker finishes the run (ten tries: no
finished step run again, no journaled call made again, no event lost or duplicated); a worker
frozen past its lease (SIGSTOP) and woken commits nothing."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from engine.store.postgres import PostgresRunStore
from tests.engine.kahn_helpers import step, workflow
from tests.worker.workers import (
    TIGHT,
    WorkerProcess,
    calls,
    chain,
    holder_pid,
    query,
    run_status,
    wait_for,
    workers,
)
from tui.worker.queue import enqueue_resume, enqueue_run

TRIES = 10
STEPS = 6

CHAIN = chain("chain", STEPS, 0.3)


def _events(address: str, run_id: str) -> list[tuple[int, str, str]]:
    return [
        (int(seq), str(kind), str(body))
        for seq, kind, body in query(
            address, "SELECT seq, kind, body FROM events WHERE run_id = %s ORDER BY seq", run_id
        )
    ]


def _journal(address: str, run_id: str) -> set[tuple[str, int, int]]:
    rows = query(
        address, "SELECT step_id, iteration, call_index FROM journal WHERE run_id = %s", run_id
    )
    return {(str(s), int(i), int(c)) for s, i, c in rows}


def _finished_steps(events: list[tuple[int, str, str]]) -> set[str]:
    import json

    return {json.loads(body)["step_id"] for _, kind, body in events if kind == "step_finished"}


def test_kill_9_mid_run_another_worker_finishes_it(pg_database: str, tmp_path: Path) -> None:
    with workers(pg_database, tmp_path, 2, *TIGHT, "--concurrency", "1") as pool:
        for attempt in range(TRIES):
            with PostgresRunStore(pg_database) as store:
                run_id = enqueue_run(store, CHAIN, {})

            def mid_run(run_id: str = run_id) -> int | None:
                finished = _finished_steps(_events(pg_database, run_id))
                return holder_pid(pg_database, run_id) if 1 <= len(finished) < STEPS - 1 else None

            pid = wait_for(f"try {attempt}: the run half done", mid_run)
            (victim,) = [w for w in pool if w.pid == pid]
            victim.signal(signal.SIGKILL)
            victim.process.wait()
            before = _events(pg_database, run_id)
            journaled = _journal(pg_database, run_id)
            pool.remove(victim)
            victim.stop()
            pool.append(WorkerProcess(pg_database, tmp_path, f"w{2 + attempt}", *TIGHT, "-c", "1"))
            wait_for(
                f"try {attempt}: the run finished elsewhere",
                lambda r=run_id: run_status(pg_database, r) == "COMPLETED",
            )
            after = _events(pg_database, run_id)
            _check(run_id, before, after, journaled, calls(tmp_path), pid)


def _check(
    run_id: str,
    before: list[tuple[int, str, str]],
    after: list[tuple[int, str, str]],
    journaled: set[tuple[str, int, int]],
    made: list[tuple[str, str, int, int]],
    killed: int,
) -> None:
    import json

    assert [seq for seq, _, _ in after] == list(range(1, len(after) + 1))  # no gap, no double
    assert after[: len(before)] == before  # what was stored stays as it was
    later = [json.loads(body) for _, kind, body in after[len(before) :]]
    done_before = _finished_steps(before)
    rerun = [
        e["step_id"] for e in later if e["kind"] == "step_started" and e["step_id"] in done_before
    ]
    assert rerun == []  # no finished step ran again
    finished = [json.loads(b)["step_id"] for _, k, b in after if k == "step_finished"]
    assert sorted(finished) == sorted(f"s{i}" for i in range(STEPS))  # each once
    assert [k for _, k, _ in after].count("run_finished") == 1
    repeated = [
        c for c in made if c[0] == run_id and c[3] != killed and (c[1], c[2], 0) in journaled
    ]
    assert repeated == []  # no journaled call made again
    assert {c[1] for c in made if c[0] == run_id} == {f"s{i}" for i in range(STEPS)}


LANGGRAPH_FLOW = workflow(
    step("a", "test.call_then_wait", config={"seconds": 0.1}),
    step("b", "test.call_then_wait", config={"seconds": 4.0}, depends_on=["a"]),
    step("c", "test.call_then_wait", config={"seconds": 0.1}, depends_on=["b"]),
    name="frozen",
    engine="langgraph",
)


def _footprint(address: str, run_id: str) -> dict[str, Any]:
    """Everything stored of a run, LangGraph's checkpoints included."""
    return {
        table: query(address, f"SELECT count(*) FROM {table} WHERE {key} = %s", run_id)[0][0]
        for table, key in (
            ("events", "run_id"),
            ("journal", "run_id"),
            ("step_history", "run_id"),
            ("checkpoints", "thread_id"),
            ("checkpoint_writes", "thread_id"),
            ("checkpoint_blobs", "thread_id"),
        )
    } | {
        "run": query(address, "SELECT status, updated_ts FROM runs WHERE run_id = %s", run_id),
        "steps": query(
            address,
            "SELECT step_id, status, runs FROM step_results WHERE run_id = %s ORDER BY step_id",
            run_id,
        ),
    }


def test_a_worker_frozen_past_its_lease_commits_nothing_after_waking(
    pg_database: str, tmp_path: Path
) -> None:
    with workers(pg_database, tmp_path, 2, *TIGHT, "--concurrency", "1") as pool:
        with PostgresRunStore(pg_database) as store:
            run_id = enqueue_run(store, LANGGRAPH_FLOW, {})

        def in_b() -> int | None:
            kinds = [(k, b) for _, k, b in _events(pg_database, run_id)]
            started_b = any(k == "step_started" and '"b"' in b for k, b in kinds)
            return holder_pid(pg_database, run_id) if started_b else None

        pid = wait_for("the run in its long step", in_b)
        (frozen,) = [w for w in pool if w.pid == pid]
        frozen.signal(signal.SIGSTOP)
        wait_for(
            "another worker to finish the run",
            lambda: run_status(pg_database, run_id) == "COMPLETED",
        )
        footprint = _footprint(pg_database, run_id)
        frozen.signal(signal.SIGCONT)
        wait_for(
            "the woken worker to give the run up",
            lambda: f"run {run_id}: job done (taken over)" in frozen.log(),
        )
        assert frozen.stop() == 0
        assert _footprint(pg_database, run_id) == footprint
    assert "lease lost" in frozen.log()
    kinds = [k for _, k, _ in _events(pg_database, run_id)]
    assert kinds.count("run_finished") == 1 and kinds.count("step_finished") == 3


def test_a_run_queued_again_while_its_job_hung_is_taken_over(
    pg_database: str, tmp_path: Path
) -> None:
    """A run queued again while its old job still shows as running (its worker died before
    the job ended: a hand-back or an answer queued it) runs once that worker is seen stalled:
    the reaper ends the old job, whose lock held the queued one back."""
    with workers(pg_database, tmp_path, 1, *TIGHT, "--concurrency", "1") as pool:
        with PostgresRunStore(pg_database) as store:
            run_id = enqueue_run(store, CHAIN, {})
        wait_for("the run taken", lambda: holder_pid(pg_database, run_id))
        (victim,) = pool
        victim.signal(signal.SIGKILL)
        victim.process.wait()
        with PostgresRunStore(pg_database) as store:
            assert enqueue_resume(store, run_id)  # a second job; the first is still 'doing'
        pool.append(WorkerProcess(pg_database, tmp_path, "w1", *TIGHT, "--concurrency", "1"))
        # the second job's end, not the run's status: the status is stored first, and a worker
        # stopped between the two (as leaving this block stops it) would hand the job back
        wait_for(
            "the second job done",
            lambda: query(
                pg_database,
                "SELECT status FROM procrastinate_jobs WHERE lock = %s AND status = 'succeeded'",
                run_id,
            ),
        )
    assert run_status(pg_database, run_id) == "COMPLETED"
    statuses = query(
        pg_database, "SELECT status FROM procrastinate_jobs WHERE lock = %s ORDER BY id", run_id
    )
    assert statuses == [("aborted",), ("succeeded",)]
    assert "was queued again already; its stalled job ended" in pool[-1].log()
