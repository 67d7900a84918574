"""Handing runs back when a worker stops: each run is fenced and queued again in one
transaction, and a run that ended meanwhile is left exactly as it is."""

from __future__ import annotations

from pathlib import Path

from engine.states import RunStatus
from engine.store.postgres import PostgresRunStore
from plumbing.postgres import Database
from tests.engine.kahn_helpers import step, workflow
from tests.worker.workers import query
from tui.config import WorkbenchConfig
from tui.launch.workspace import Workspace
from tui.worker.queue import enqueue_run, run_job
from tui.worker.runs import ActiveRun, RunDriver
from tui.worker.settings import WorkerSettings

FLOW = workflow(step("a"), name="handed")


def test_handing_back_leaves_a_run_that_ended_meanwhile_alone(
    pg_database: str, tmp_path: Path
) -> None:
    with PostgresRunStore(pg_database) as store:
        ended = enqueue_run(store, FLOW, {})
        store.set_status(ended, RunStatus.COMPLETED, "done")
        going = enqueue_run(store, FLOW, {})
        store.set_status(going, RunStatus.RUNNING, "running")
    driver = RunDriver(
        Database(pg_database), Workspace(tmp_path), WorkbenchConfig(), WorkerSettings()
    )
    driver.active = {run_id: ActiveRun(run_id) for run_id in (ended, going)}
    runs = dict(driver.active)
    assert driver.hand_back() == [going]
    # each job, cancelled by the stop, names what happened to its run
    assert runs[going].stopped_outcome() == "handed back"
    assert runs[ended].stopped_outcome() == "stopped with the worker"
    leases = query(pg_database, "SELECT run_id, epoch FROM run_leases")
    assert leases == [(going, 1)]  # the ended run was not claimed
    with PostgresRunStore(pg_database) as store:
        assert store.get_run(ended).status == RunStatus.COMPLETED
        assert run_job(store, going) == "queued"
