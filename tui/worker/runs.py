"""Driving the runs a worker takes: one job of the run task, one run.

A job's run is driven on a thread and loop of its own (own_loop.py) with a run store handle of
its own: the handle claims the run's lease (a new epoch), and every write it makes — and every
LangGraph checkpoint of the run — checks that epoch in its transaction (engine/store/lease.py).
So a worker that lost the run (killed, frozen, cut off while another took over) commits nothing
more for it however late it wakes. The worker also watches its leases: at every heartbeat it
reads each run's epoch, and a run taken over is cancelled here at once, with one log line,
rather than at its next write.

How a job ends: the run finished, or it waits for a person (WAITING: the job ends and frees
its slot; an answer queues it again, tui/worker/queue.py), or it was taken over (the job ends
quietly: its new holder has it). A user's cancel (procrastinate's abort) cancels the run, which
ends CANCELLED; a stopping worker hands its runs back instead: it fences itself out with a new
epoch and queues each run again, so another worker continues it without a gap.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from procrastinate.job_context import AbortReason, JobContext

from engine.protocol import ExecutionResult
from engine.states import RunStatus
from engine.store import LeaseLost
from plumbing.postgres import Database
from tui.worker.own_loop import OwnLoop
from tui.worker.settings import WorkerSettings

if TYPE_CHECKING:
    from engine.store.postgres import PostgresRunStore
    from tui.config import WorkbenchConfig
    from tui.launch.workspace import Workspace

log = logging.getLogger("workbench.worker")


def lease_lost(error: BaseException) -> LeaseLost | None:
    """The :class:`LeaseLost` behind ``error`` (itself, a cause or context, or inside an
    exception group), or None."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, LeaseLost):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


@dataclass
class ActiveRun:
    """A run this worker drives right now."""

    run_id: str
    drive: OwnLoop[ExecutionResult | None] | None = None
    store: PostgresRunStore | None = None
    epoch: int | None = None
    taken_over: int | None = field(default=None)
    """The epoch that holds the run now, once the watch saw another take it over."""
    handed_back: bool = False
    """True once a stopping worker queued the run again for another worker."""

    def stopped_outcome(self) -> str:
        """How the job ends when the worker's stop cancelled it: a run that was queued again
        is "handed back"; one that ended meanwhile (or could not be queued) only "stopped"."""
        return "handed back" if self.handed_back else "stopped with the worker"


class RunDriver:
    """The runs of one worker process: takes a job's run, watches the leases, hands runs back."""

    def __init__(
        self,
        database: Database,
        workspace: Workspace,
        config: WorkbenchConfig,
        settings: WorkerSettings,
    ) -> None:
        self.database = database
        self.workspace = workspace
        self.config = config
        self.settings = settings
        self.active: dict[str, ActiveRun] = {}
        self.stopping = False

    # -- one job -------------------------------------------------------------------
    async def run_job(self, context: JobContext, run_id: str) -> str:
        """The run task's body: drive ``run_id`` until it ends, waits or is taken over."""
        stale = self.active.get(run_id)
        if stale is not None and stale.drive is not None:
            # this process drove it before the reaper thought it stalled: the new claim below
            # fences the old copy out; end it first so one thread drives the run
            log.info("run %s: queued again while still driven here; ending the old copy", run_id)
            stale.drive.cancel()
            await asyncio.gather(stale.drive.wait(), return_exceptions=True)
        active = ActiveRun(run_id)
        self.active[run_id] = active
        active.drive = OwnLoop(f"run {run_id}", lambda: self._drive(active)).start()
        watch = asyncio.create_task(self._watch(active), name=f"lease watch {run_id}")
        outcome = "cancelled"
        try:
            outcome = self._outcome(active, await active.drive.wait())
        except asyncio.CancelledError:
            if active.taken_over is not None:
                outcome = "taken over"  # the watch cancelled it before a write was refused
            elif context.abort_reason() == AbortReason.SHUTDOWN or self.stopping:
                outcome = active.stopped_outcome()
            else:
                raise
        except Exception as error:  # noqa: BLE001 - a lost lease ends the job quietly
            outcome = self._outcome_of_error(active, error)
        finally:
            log.info("run %s: job done (%s)", run_id, outcome)
            watch.cancel()
            if self.active.get(run_id) is active:
                del self.active[run_id]
        return outcome

    async def _drive(self, active: ActiveRun) -> ExecutionResult | None:
        """On the run's own loop: claim the lease, then resume the run where its store says."""
        from engine.store.postgres import PostgresRunStore
        from tui.launch.run import open_run
        from tui.launch.steps import register_steps

        run_id = active.run_id
        with PostgresRunStore(self.database) as store:
            record = store.get_run(run_id)
            if record.status.final:
                log.info("run %s: already %s; nothing to do", run_id, record.status.value)
                return None
            active.store = store
            active.epoch = store.claim(run_id)
            log.info("run %s: taken (lease epoch %d)", run_id, active.epoch)
            register_steps(self.workspace)
            async with open_run(
                self.workspace,
                record.definition,
                inputs=record.inputs,
                run_id=run_id,
                engine=record.engine,
                engine_reason=record.engine_reason,
                store=store,
                settings=self.config,
            ) as run:
                return await run.resume()

    async def _watch(self, active: ActiveRun) -> None:
        """Every heartbeat, read the run's epoch; another's means it was taken over: cancel
        the run here at once."""
        while True:
            await asyncio.sleep(self.settings.heartbeat_s)
            if active.epoch is None:
                continue
            try:
                current = await asyncio.to_thread(self._current_epoch, active.run_id)
            except Exception:  # noqa: BLE001 - the database is away: the fence still holds
                continue
            if current != active.epoch:
                active.taken_over = current
                log.warning(
                    "run %s: lease lost (this worker held epoch %d; %s) — stopping it here,"
                    " nothing more is written for it by this worker",
                    active.run_id,
                    active.epoch,
                    f"epoch {current} holds it now" if current is not None else "no lease",
                )
                if active.drive is not None:
                    active.drive.cancel()
                return

    def _current_epoch(self, run_id: str) -> int | None:
        with self.database.connect(connect_timeout=5) as conn:
            row = conn.execute("SELECT epoch FROM run_leases WHERE run_id = %s", (run_id,))
            found = row.fetchone()
        return int(found[0]) if found else None

    def _outcome(self, active: ActiveRun, result: ExecutionResult | None) -> str:
        run_id = active.run_id
        if result is None:
            return "nothing to do"
        if result.status == RunStatus.WAITING:
            log.info(
                "run %s: WAITING (%s) — its slot is free until an answer queues it again",
                run_id,
                result.reason,
            )
        else:
            log.info("run %s: %s", run_id, result.status.value)
        return result.status.value

    def _outcome_of_error(self, active: ActiveRun, error: BaseException) -> str:
        lost = lease_lost(error)
        if lost is None:
            log.error("run %s: stopped by an error in the worker: %s", active.run_id, error)
            raise error
        if self.stopping:
            return active.stopped_outcome()
        if active.taken_over is None:
            log.warning(
                "run %s: lease lost (%s) — nothing more is written for it by this worker",
                active.run_id,
                lost,
            )
        return "taken over"

    # -- stopping ------------------------------------------------------------------
    def hand_back(self) -> list[str]:
        """Give every run back to the queue: fence this worker out with a new epoch and queue
        the run again, in one transaction (a run that ended meanwhile is left as it is), and
        cancel it here (its cancelled ending is refused by the fence). The runs handed back."""
        from engine.store.postgres import PostgresRunStore
        from tui.worker.queue import NotQueueable, enqueue_resume

        self.stopping = True
        handed: list[str] = []
        runs = list(self.active.values())
        if runs:
            try:
                with PostgresRunStore(self.database, pool_size=1) as store:
                    for active in runs:
                        # marked before the commit: the drive, fenced out by it, may end (on
                        # this worker's loop, while this runs on a thread) before we return
                        active.handed_back = True
                        try:
                            with store.batch():  # the new epoch stands only if it is queued
                                store.claim(active.run_id)
                                enqueue_resume(store, active.run_id)
                        except BaseException as refused:
                            active.handed_back = False
                            if isinstance(refused, NotQueueable):
                                continue  # it ended meanwhile: nothing to hand back
                            raise
                        handed.append(active.run_id)
                        log.info("run %s: handed back to the queue", active.run_id)
            except Exception as error:  # noqa: BLE001 - the reaper elsewhere takes them over
                log.warning(
                    "could not hand runs back (%s); other workers take them over once this"
                    " one is seen stalled",
                    error,
                )
        for active in runs:
            if active.drive is not None:
                active.drive.cancel()
        return handed
