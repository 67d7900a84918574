"""The run queue: runs waiting for a worker, kept by procrastinate in the PostgreSQL store.

What the server and the command line call to hand runs to ``workbench worker`` processes:

* :func:`enqueue_run` creates the run (WAITING, "queued for a worker") and its job;
* :func:`enqueue_fork` stores a fork of a run (as `workbench runs fork` makes it) and queues it;
* :func:`enqueue_resume` queues a stored RUNNING or WAITING run again (after an answer);
* :func:`answer_run` records an answer and queues the run again;
* :func:`cancel_run` takes a queued run off the queue, asks a worker to stop a running one,
  or ends a run that no worker holds;
* :func:`run_job` tells where a run is in the queue.

Every change to a run and to its job is made in one transaction of the run store: the job is
inserted on the store's own connection (procrastinate's ``connection=``), so a run is never
created without its job nor queued twice by one answer. One job per run at a time: its
procrastinate ``queueing_lock`` and ``lock`` are the run id. The worker side — taking jobs,
leases, the reaper — is tui/worker/worker.py; this module imports nothing that runs a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from engine.context import InterruptAnswer
from engine.events import RunFinished
from engine.protocol import ForkEdits
from engine.run_inputs import resolve_inputs
from engine.spec import WorkflowDefinition
from engine.states import RunStatus
from engine.store import InterruptRecord, new_run_id

if TYPE_CHECKING:
    import procrastinate

    from engine.store.postgres import PostgresRunStore

QUEUE = "runs"
"""The procrastinate queue of runs."""
RUN_TASK = "workbench.run"
"""The task of a run's job; its one argument is ``run_id``."""
QUEUED_REASON = "queued for a worker"
"""A queued run's status reason (the run is WAITING until a worker takes it)."""

JobState = Literal["queued", "running"]
CancelOutcome = Literal["dequeued", "stopping", "cancelled"]


class NotQueueable(ValueError):
    """The run cannot be queued (it has finished); ``str()`` is one line."""


def _app(store: PostgresRunStore) -> procrastinate.App:
    """A procrastinate app on the store's own pool: a job's insert runs on the store's
    transaction, a look-up on a pooled connection."""
    import procrastinate

    connector = procrastinate.SyncPsycopgConnector()
    connector.open(store.pool)  # an external pool: closing the app leaves it open
    return procrastinate.App(connector=connector)


def _defer(store: PostgresRunStore, run_id: str) -> bool:
    """Insert the run's job in the store's open transaction; False when one is already
    queued (its ``queueing_lock``)."""
    from procrastinate.exceptions import AlreadyEnqueued

    deferrer = _app(store).configure_task(
        RUN_TASK,
        queue=QUEUE,
        lock=run_id,
        queueing_lock=run_id,
        connection=store.connection(),
    )
    try:
        with store.connection().transaction():  # a savepoint: a refused insert keeps the rest
            deferrer.defer(run_id=run_id)
    except AlreadyEnqueued:
        return False
    return True


def enqueue_run(
    store: PostgresRunStore,
    definition: WorkflowDefinition,
    inputs: Mapping[str, Any],
    *,
    engine: str | None = None,
    run_id: str | None = None,
) -> str:
    """Create a run of ``definition`` with ``inputs`` and queue it for a worker; its id.

    ``engine`` forces an engine (None or ``auto``: chosen by the workflow's shape). The inputs
    are checked here: a wrong one raises :class:`~engine.run_inputs.InputError` (one line) and
    nothing is stored. The run is WAITING with the reason :data:`QUEUED_REASON` until a
    worker starts it.
    """
    from engine.selector import select_engine

    resolved = resolve_inputs(definition, inputs)
    selection = select_engine(definition, engine)
    run_id = run_id or new_run_id()
    with store.batch():
        store.create_run(definition, resolved, selection.name, selection.reason, run_id=run_id)
        store.set_status(run_id, RunStatus.WAITING, QUEUED_REASON)
        _defer(store, run_id)
    return run_id


def enqueue_fork(
    store: PostgresRunStore,
    source_run_id: str,
    at_step: str,
    edits: ForkEdits,
    *,
    engine: str | None = None,
    run_id: str | None = None,
) -> str:
    """Store a fork of ``source_run_id`` at ``at_step`` (``STEP[@ITERATION]``) with ``edits``
    — the results it keeps, as the engine's fork stores them — and queue it for a worker,
    which runs it on from the fork point; its id.

    ``engine`` runs the fork (None: the source's). :class:`~engine.store.UnknownRun` when
    there is no such run, :class:`~engine.time_travel.ForkError` (one line) when the fork
    cannot be made; nothing is stored then."""
    from engine.protocol import RunContext
    from engine.selector import create_engine

    name = engine or store.get_run(source_run_id).engine
    context = RunContext(store=store, run_id=run_id or new_run_id())
    with store.batch():
        forked = create_engine(name).stage_fork(source_run_id, at_step, context, edits)
        store.set_status(forked, RunStatus.WAITING, QUEUED_REASON)
        _defer(store, forked)
    return forked


def enqueue_resume(store: PostgresRunStore, run_id: str) -> bool:
    """Queue the stored run ``run_id`` again (a WAITING run whose answers are stored, or a
    RUNNING one whose worker is gone); False when it is already queued.

    :class:`~engine.store.UnknownRun` when there is no such run, :class:`NotQueueable` when
    it has finished."""
    with store.batch():
        _require_unfinished(store, run_id)
        return _defer(store, run_id)


def answer_run(
    store: PostgresRunStore, interrupt_id: str, answer: InterruptAnswer
) -> InterruptRecord:
    """Record ``answer`` to an open interrupt and queue its run again, in one transaction.

    LookupError when there is no such interrupt, :class:`NotQueueable` when its run has
    finished."""
    with store.batch():
        record = store.record_answer(interrupt_id, answer)
        _require_unfinished(store, record.run_id)
        _defer(store, record.run_id)
    return record


def _require_unfinished(store: PostgresRunStore, run_id: str) -> None:
    status = store.get_run(run_id).status
    if status.final:
        raise NotQueueable(
            f"run {run_id} is {status.value}; only a RUNNING or WAITING run is queued again"
        )


def run_job(store: PostgresRunStore, run_id: str) -> JobState | None:
    """Where ``run_id`` is in the queue: ``queued`` (waiting for a worker), ``running`` (a
    worker has it), or None (no job: finished, or waiting for an answer)."""
    for job in _app(store).job_manager.list_jobs(task=RUN_TASK, lock=run_id):
        if job.status == "todo":
            return "queued"
        if job.status == "doing":
            return "running"
    return None


def cancel_run(store: PostgresRunStore, run_id: str) -> CancelOutcome:
    """Stop ``run_id``: ``dequeued`` (its job was still queued; the run is CANCELLED),
    ``stopping`` (a worker runs it and is asked to stop: the worker ends it CANCELLED), or
    ``cancelled`` (no worker held it: it is CANCELLED now).

    :class:`~engine.store.UnknownRun` when there is no such run, :class:`NotQueueable` when
    it has finished."""
    manager = _app(store).job_manager
    with store.batch():
        _require_unfinished(store, run_id)
        jobs = [
            job
            for job in _jobs_in_batch(store, run_id)
            if job.status in ("todo", "doing") and job.id is not None
        ]
        for job in jobs:
            assert job.id is not None
            if job.status == "doing":
                manager.cancel_job_by_id(job.id, abort=True, connection=store.connection())
                return "stopping"
            manager.cancel_job_by_id(job.id, connection=store.connection())
        _end_cancelled(store, run_id)
    return "dequeued" if jobs else "cancelled"


def _jobs_in_batch(store: PostgresRunStore, run_id: str) -> list[procrastinate.jobs.Job]:
    """The run's jobs, read in the store's open batch with procrastinate's own ``list_jobs``
    query: its job manager reads on another pooled connection, and a store opened with a
    one-connection pool has lent that one to the batch (the look-up would wait for ever)."""
    from procrastinate import jobs, sql
    from psycopg.rows import dict_row

    filters = dict.fromkeys(("id", "queue_name", "status", "queueing_lock", "worker_id"))
    with store.connection().cursor(row_factory=dict_row) as cursor:
        cursor.execute(sql.queries["list_jobs"], {**filters, "task_name": RUN_TASK, "lock": run_id})
        return [jobs.Job.from_row(row) for row in cursor.fetchall()]


def _end_cancelled(store: PostgresRunStore, run_id: str) -> None:
    """End a run no worker holds as CANCELLED, with its ``run_finished`` event."""
    steps = store.step_results(run_id)
    store.set_status(run_id, RunStatus.CANCELLED, "cancelled")
    store.append(
        RunFinished(
            run_id=run_id,
            status=RunStatus.CANCELLED,
            reason="cancelled",
            step_statuses={step_id: result.status.value for step_id, result in steps.items()},
        )
    )


__all__ = [
    "QUEUE",
    "QUEUED_REASON",
    "RUN_TASK",
    "CancelOutcome",
    "JobState",
    "NotQueueable",
    "answer_run",
    "cancel_run",
    "enqueue_fork",
    "enqueue_resume",
    "enqueue_run",
    "run_job",
]
