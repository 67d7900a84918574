"""The worker's procrastinate app: its connector on our connection settings, and a job
manager that never finishes a job another worker has taken over.

procrastinate ends a job with ``procrastinate_finish_job``, which updates the job whatever
worker holds it. After the reaper queued a stalled worker's job again and another worker took
it, the stalled worker — woken from SIGSTOP, say — would mark the *new* holder's job finished
when its own copy ends; should the new holder then die, no job of that run would be left in
``doing`` for the reaper to find. So a job is finished only while it is still this worker's
(its ``worker_id``; none once procrastinate pruned a stalled worker's row, when the reaper
ends the job) and in ``doing``, in one statement; the run itself is safe either way
(its lease fences the stale worker's writes: engine/store/lease.py).
"""

from __future__ import annotations

import logging
from typing import Any

import procrastinate
from procrastinate import jobs, manager

from plumbing.postgres import CONNECTION_KWARGS, Database, configure_session_async

log = logging.getLogger("workbench.worker")

_FINISH_IF_MINE = (
    "SELECT procrastinate_finish_job_v1(id, %(status)s, %(delete_job)s)"
    " FROM procrastinate_jobs"
    " WHERE id = %(job_id)s AND worker_id IS NOT DISTINCT FROM %(worker_id)s"
    " AND status = 'doing'"
)


class FencedJobManager(manager.JobManager):
    """procrastinate's job manager, finishing only this worker's own jobs."""

    async def finish_job(self, job: jobs.Job, status: jobs.Status, delete_job: bool) -> None:
        assert job.id is not None
        rows = await self.connector.execute_query_all_async(
            query=_FINISH_IF_MINE,
            job_id=job.id,
            worker_id=job.worker_id,
            status=status.value,
            delete_job=delete_job,
        )
        if not rows:
            log.info(
                "job %s (run %s) was queued again meanwhile; its new holder finishes it",
                job.id,
                job.task_kwargs.get("run_id"),
            )


def worker_app(database: Database, *, pool_size: int) -> procrastinate.App:
    """A procrastinate app on ``database`` with :class:`FencedJobManager` (opened by the
    caller)."""
    connector = procrastinate.PsycopgConnector(
        conninfo=database.conninfo,
        kwargs=dict(CONNECTION_KWARGS),
        configure=configure_session_async,
        min_size=1,
        max_size=pool_size,
        timeout=5.0,
        name="worker queue",
    )
    app = procrastinate.App(connector=connector)
    app.job_manager = FencedJobManager(connector=connector)
    return app


def job_run_id(job: jobs.Job) -> str:
    """The run a job of the run task is for."""
    value: Any = job.task_kwargs.get("run_id", "")
    return str(value)
