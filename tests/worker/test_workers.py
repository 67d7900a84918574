"""Workers as real processes on a real PostgreSQL: runs taken from the queue and finished, a
waiting run that frees its slot until the answer queues it again, CPU-heavy steps that do not
starve the heartbeat, two workers that never both run one run, a running run cancelled, a
stopping worker handing its run to another."""

from __future__ import annotations

from pathlib import Path

from engine.context import InterruptAnswer
from engine.store.postgres import PostgresRunStore
from tests.engine.kahn_helpers import step, workflow
from tests.worker.workers import (
    PATIENT,
    calls,
    chain,
    holder_pid,
    query,
    run_status,
    wait_for,
    workers,
)
from tui.worker.queue import answer_run, cancel_run, enqueue_run, run_job


def test_two_workers_share_the_queue_and_never_both_run_one_run(
    pg_database: str, tmp_path: Path
) -> None:
    wf = chain("shared", 3, 0.05)
    with PostgresRunStore(pg_database) as store:
        run_ids = [enqueue_run(store, wf, {}) for _ in range(8)]
    with workers(pg_database, tmp_path, 2, *PATIENT, "--concurrency", "2"):
        for run_id in run_ids:
            wait_for(f"{run_id} done", lambda r=run_id: run_status(pg_database, r) == "COMPLETED")
    for run_id in run_ids:
        kinds = [
            row[0]
            for row in query(
                pg_database, "SELECT kind FROM events WHERE run_id = %s ORDER BY seq", run_id
            )
        ]
        assert kinds.count("run_started") == 1 and kinds.count("step_started") == 3
        (epoch,) = query(pg_database, "SELECT epoch FROM run_leases WHERE run_id = %s", run_id)
        assert epoch == (1,)  # claimed once: no second worker ever took it
    made = calls(tmp_path)
    assert len(made) == 8 * 3 and len({c[:3] for c in made}) == 8 * 3
    assert len({c[3] for c in made}) == 2  # both workers took runs


def test_a_waiting_run_frees_its_slot_and_its_answer_queues_it_again(
    pg_database: str, tmp_path: Path
) -> None:
    asking = workflow(step("ask", "test.ask"), step("after", depends_on=["ask"]), name="asking")
    quick = chain("quick", 1, 0.0)
    with workers(pg_database, tmp_path, 1, *PATIENT, "--concurrency", "1"):
        with PostgresRunStore(pg_database) as store:
            waiting = enqueue_run(store, asking, {})
            wait_for(
                "the run to wait",
                lambda: (
                    run_status(pg_database, waiting) == "WAITING"
                    and store.pending_interrupts(waiting)
                ),
            )
            other = enqueue_run(store, quick, {})
            wait_for(
                "the one slot to take the next run",
                lambda: run_status(pg_database, other) == "COMPLETED",
            )
            (pending,) = store.pending_interrupts(waiting)
            answer_run(store, pending.interrupt_id, InterruptAnswer(action="approve"))
            wait_for("the answered run", lambda: run_status(pg_database, waiting) == "COMPLETED")
            results = store.step_results(waiting)
    assert results["ask"].outputs["given"] == "approve"
    assert [c[1] for c in calls(tmp_path) if c[0] == waiting] == ["ask"]  # from the journal


def test_cancelling_a_running_run_stops_it_on_its_worker(pg_database: str, tmp_path: Path) -> None:
    long = workflow(step("long", "test.call_then_wait", config={"seconds": 600.0}), name="long")
    with workers(pg_database, tmp_path, 1, *PATIENT, "--concurrency", "1") as (worker,):
        with PostgresRunStore(pg_database) as store:
            run_id = enqueue_run(store, long, {})
            wait_for("the run in its step", lambda: any(c[0] == run_id for c in calls(tmp_path)))
            assert cancel_run(store, run_id) == "stopping"
            wait_for("the run cancelled", lambda: run_status(pg_database, run_id) == "CANCELLED")
            wait_for("its job ended", lambda: run_job(store, run_id) is None)
        assert worker.stop() == 0
    kinds = query(pg_database, "SELECT kind FROM events WHERE run_id = %s ORDER BY seq", run_id)
    assert [k for (k,) in kinds] == ["run_started", "step_started", "step_skipped", "run_finished"]
    assert f"run {run_id}: job done (cancelled)" in worker.log()


def test_cpu_heavy_steps_do_not_starve_the_heartbeat(pg_database: str, tmp_path: Path) -> None:
    """A run spinning the CPU in pure Python for longer than the stall time is never taken for
    a stalled worker's: the other worker's reaper leaves it alone (the lease is claimed once).
    At the default heartbeat and stall time: with a 4 s stall on a machine loaded far beyond
    its cores, a late heartbeat once let such a run be taken over (safely: fenced)."""
    heavy = workflow(step("spin", "test.busy", config={"seconds": 12.0}), name="heavy")
    stall = ("--poll", "0.5")
    with PostgresRunStore(pg_database) as store:
        run_id = enqueue_run(store, heavy, {})
    with workers(pg_database, tmp_path, 2, *stall, "--concurrency", "1") as pool:
        wait_for("the run done", lambda: run_status(pg_database, run_id) == "COMPLETED")
    (epoch,) = query(pg_database, "SELECT epoch FROM run_leases WHERE run_id = %s", run_id)
    assert epoch == (1,)
    assert not any("queued again" in w.log() for w in pool)


def test_a_stopping_worker_hands_its_run_to_another(pg_database: str, tmp_path: Path) -> None:
    wf = chain("handed", 4, 1.0)
    with workers(pg_database, tmp_path, 2, *PATIENT, "--concurrency", "1") as pool:
        with PostgresRunStore(pg_database) as store:
            run_id = enqueue_run(store, wf, {})
        # in its first step: the workspace's default corpus, built synchronously as the run
        # opens, is behind it (a stop during that build exits only by the shutdown timer)
        wait_for("the run in its first step", lambda: any(c[0] == run_id for c in calls(tmp_path)))
        pid = holder_pid(pg_database, run_id)
        (stopping,) = [w for w in pool if w.pid == pid]
        assert stopping.stop() == 0  # SIGTERM
        assert f"run {run_id}: handed back to the queue" in stopping.log()
        (other,) = [w for w in pool if w is not stopping]
        # its log line, not the run's status: the status is stored first, and a worker stopped
        # between the two (as leaving this block stops it) would never write the line
        wait_for("the other worker to finish it", lambda: f"run {run_id}: COMPLETED" in other.log())
    assert run_status(pg_database, run_id) == "COMPLETED"
    made = [c for c in calls(tmp_path) if c[0] == run_id]
    assert sorted(c[1] for c in made) == [f"s{i}" for i in range(4)]  # no call made twice
