"""The reaper: queues again the runs of workers that stopped sending heartbeats.

procrastinate (since 3.1) shows a stalled worker's jobs (``get_stalled_jobs``: jobs in
``doing`` whose worker's heartbeat is older than the stall time) but does not retry them by
itself. Every worker runs this loop on its own event loop, beside the jobs rather than as a
job: a reaper queued as a periodic job would need a free slot, and when every slot is busy
with a long run no reaper would run. Several reapers may find one job; ``retry_job`` moves
it back to ``todo`` only from ``doing``, so the others' retries are refused and ignored.
A stalled job whose run has been queued again meanwhile cannot go back to ``todo`` (one queued
job per run): it is ended instead, since its ``lock`` would keep the queued job from running.
"""

from __future__ import annotations

import asyncio
import logging

import procrastinate
from procrastinate import jobs

from tui.worker.job_manager import job_run_id
from tui.worker.queue import QUEUE, RUN_TASK
from tui.worker.settings import WorkerSettings

log = logging.getLogger("workbench.worker")


async def reap_once(app: procrastinate.App, stalled_after_s: float) -> list[str]:
    """Queue again the runs of stalled workers; the runs queued."""
    stalled = await app.job_manager.get_stalled_jobs(
        queue=QUEUE, task_name=RUN_TASK, seconds_since_heartbeat=stalled_after_s
    )
    queued: list[str] = []
    for job in stalled:
        run_id = job_run_id(job)
        try:
            await app.job_manager.retry_job(job)
        except procrastinate.exceptions.UniqueViolation:
            # the run was queued again meanwhile (an answer, or its worker handing it back
            # before it hung): end this job, whose lock would hold the queued one back
            await app.job_manager.finish_job(job, jobs.Status.ABORTED, delete_job=False)
            log.info("reaper: run %s was queued again already; its stalled job ended", run_id)
            continue
        except procrastinate.exceptions.ProcrastinateException:
            continue  # another reaper queued it first
        queued.append(run_id)
        log.info(
            "reaper: run %s's worker sent no heartbeat for %g s — queued again",
            run_id,
            stalled_after_s,
        )
    return queued


async def reap_forever(app: procrastinate.App, settings: WorkerSettings) -> None:
    """:func:`reap_once` every ``reaper_every_s`` until cancelled; a failed round (the
    database away) is tried again at the next."""
    while True:
        await asyncio.sleep(settings.reaper_every_s)
        try:
            await reap_once(app, settings.stalled_after_s)
        except Exception as error:  # noqa: BLE001 - the next round tries again
            log.debug("reaper round failed: %s", error)
