"""``workbench worker``: a process that takes queued runs from the PostgreSQL store.

The process runs procrastinate's worker on its event loop — the jobs of the run queue
(tui/worker/queue.py), its heartbeat, LISTEN for new jobs with polling as the backstop (a
dropped LISTEN connection costs at most one poll) — beside the reaper (reaper.py). Each job
drives its run on a thread of its own (runs.py), so the loop's heartbeat is never starved.

procrastinate stops its worker when one of its side tasks fails (the heartbeat or the
listener meeting a database that went away); this process then starts it again after a pause,
until it is asked to stop. Stopping (SIGTERM, SIGINT) hands the runs back to the queue and
exits within ``shutdown_s`` even when the database is gone: a timer ends the process if the
orderly exit has not by then.
"""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import signal
import socket
import threading
from typing import TYPE_CHECKING

import procrastinate

from plumbing.postgres import Database
from tui.exit_codes import COMPLETED, WORKER_HUNG
from tui.worker.job_manager import worker_app
from tui.worker.queue import QUEUE, RUN_TASK
from tui.worker.reaper import reap_forever
from tui.worker.runs import RunDriver
from tui.worker.settings import WorkerSettings

if TYPE_CHECKING:
    from tui.config import WorkbenchConfig
    from tui.launch.workspace import Workspace

log = logging.getLogger("workbench.worker")

RESTART_PAUSE_S = 2.0
"""The pause before procrastinate's worker is started again after it stopped on an error."""


def run_worker(
    address: str,
    workspace: Workspace,
    config: WorkbenchConfig,
    settings: WorkerSettings,
    name: str | None = None,
) -> int:
    """Take and drive queued runs until SIGTERM or SIGINT; the exit status."""
    database = Database(address)
    name = name or f"{socket.gethostname()}:{os.getpid()}"
    return asyncio.run(_serve(database, workspace, config, settings, name))


async def _serve(
    database: Database,
    workspace: Workspace,
    config: WorkbenchConfig,
    settings: WorkerSettings,
    name: str,
) -> int:
    from engine.store.postgres import PostgresRunStore

    PostgresRunStore(database, pool_size=1).close()  # the schema is checked: one clear line
    driver = RunDriver(database, workspace, config, settings)
    app = worker_app(database, pool_size=settings.concurrency + 4)
    app.task(name=RUN_TASK, queue=QUEUE, pass_context=True)(driver.run_job)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    log.info(
        "worker %s: taking runs from %s (concurrency %d, heartbeat %g s, stalled after %g s)",
        name,
        database.display,
        settings.concurrency,
        settings.heartbeat_s,
        settings.stalled_after_s,
    )
    reaper: asyncio.Task[None] | None = None
    try:
        async with app.open_async():
            reaper = asyncio.create_task(reap_forever(app, settings), name="reaper")
            await _work_until_stopped(app, driver, settings, name, stop)
    finally:
        _exit_by(settings.shutdown_s)
        if reaper is not None:
            reaper.cancel()
            await asyncio.gather(reaper, return_exceptions=True)
    log.info("worker %s: stopped", name)
    return COMPLETED


async def _work_until_stopped(
    app: procrastinate.App,
    driver: RunDriver,
    settings: WorkerSettings,
    name: str,
    stop: asyncio.Event,
) -> None:
    """procrastinate's worker, started again whenever it ends on its own, until ``stop``."""
    while not stop.is_set():
        work = asyncio.create_task(
            app.run_worker_async(
                queues=[QUEUE],
                name=name,
                concurrency=settings.concurrency,
                fetch_job_polling_interval=settings.poll_s,
                abort_job_polling_interval=settings.poll_s,
                listen_notify=True,
                install_signal_handlers=False,
                update_heartbeat_interval=settings.heartbeat_s,
                stalled_worker_timeout=settings.stalled_after_s,
                shutdown_graceful_timeout=0,
            ),
            name="procrastinate worker",
        )
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait([work, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if stop.is_set():
            handed = await asyncio.to_thread(driver.hand_back)
            log.info("worker %s: stopping; %d run(s) handed back", name, len(handed))
            _exit_by(settings.shutdown_s)
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
            return
        error = work.exception() if not work.cancelled() else None
        log.warning(
            "worker %s: the queue's worker stopped (%s); starting it again in %g s",
            name,
            error or "no error",
            RESTART_PAUSE_S,
        )
        try:
            await asyncio.wait_for(stop.wait(), RESTART_PAUSE_S)
        except TimeoutError:
            pass


_EXIT_TIMER: list[threading.Timer] = []


def _exit_by(seconds: float) -> None:
    """End the process ``seconds`` from now unless it has exited by then (a shutdown that
    waits on a database that is gone must not hang); started once."""
    if _EXIT_TIMER:
        return

    def hung() -> None:
        log.error(
            "worker: the orderly exit took more than %g s; exiting now (where each thread"
            " was waiting follows)",
            seconds,
        )
        logging.shutdown()
        faulthandler.dump_traceback(all_threads=True)
        os._exit(WORKER_HUNG)

    timer = threading.Timer(seconds, hung)
    timer.daemon = True
    timer.start()
    _EXIT_TIMER.append(timer)
