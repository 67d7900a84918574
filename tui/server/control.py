"""The run API's steering routes: start a run, answer a prompt, resume, fork, cancel — each handed to
the workers through the run queue (tui/worker/queue.py), in the store's own transaction.

The server runs nothing itself: a started run is stored WAITING ("queued for a worker") with
its job, and `workbench worker` processes take it. An answer is stored and its run queued again
in one transaction, so a run is never left waiting for an answer it has.
"""

from __future__ import annotations

from fastapi import APIRouter

from engine.context import InterruptAnswer
from engine.spec import WorkflowDefinition
from engine.store import InterruptRecord
from engine.store.postgres import PostgresRunStore
from tui.launch.fork_options import fork_edits
from tui.launch.steps import register_steps
from tui.server.errors import ApiError
from tui.server.reads import IdPath
from tui.server.schemas import (
    Answer,
    ErrorBody,
    ForkRun,
    ResumeRun,
    RunAccepted,
    RunCancelled,
    StartRun,
)
from tui.server.services import ServerServices
from tui.worker.queue import answer_run, cancel_run, enqueue_fork, enqueue_resume, enqueue_run


def control_routes(services: ServerServices) -> APIRouter:
    routes = APIRouter(prefix="/v1")

    @routes.post(
        "/runs",
        status_code=202,
        summary="Start a run of a shipped workflow or of a definition sent along (queued)",
    )
    def start(request: StartRun) -> RunAccepted:
        definition = _definition(services, request)
        run_id = enqueue_run(
            services.runs,
            definition,
            request.inputs,
            engine=request.engine,
            run_id=request.run_id,
        )
        record = services.runs.get_run(run_id)
        return RunAccepted(run_id=run_id, workflow=record.workflow, engine=record.engine)

    @routes.post(
        "/interrupts/{interrupt_id}/answer",
        summary="Answer a prompt or a tie-breaker",
        responses={
            409: {
                "model": ErrorBody,
                "description": "Answered already (each prompt takes one answer; of answers sent"
                " at once, one is stored), or its run has finished.",
            }
        },
    )
    def answer(interrupt_id: IdPath, given: Answer) -> InterruptRecord:
        return answer_run(services.runs, interrupt_id, InterruptAnswer(**given.model_dump()))

    @routes.post(
        "/runs/{run_id}/resume",
        status_code=202,
        summary="Queue a stopped or waiting run again, answering its pending prompts",
    )
    def resume(run_id: IdPath, request: ResumeRun) -> RunAccepted:
        store = services.runs
        with store.batch():
            record = store.get_run(run_id)
            for interrupt_id, given in _addressed(store, run_id, request).items():
                store.record_answer(interrupt_id, InterruptAnswer(**given.model_dump()))
            enqueue_resume(store, run_id)
        return RunAccepted(run_id=run_id, workflow=record.workflow, engine=record.engine)

    @routes.post(
        "/runs/{run_id}/fork",
        status_code=202,
        summary="Time travel: a new run from this one just before a step's pass (queued)",
    )
    def fork(run_id: IdPath, request: ForkRun) -> RunAccepted:
        register_steps(services.workspace)
        edits = fork_edits(request.sets, request.inputs)
        engine = None if request.engine == "same" else request.engine
        forked = enqueue_fork(
            services.runs, run_id, request.at, edits, engine=engine, run_id=request.run_id
        )
        record = services.runs.get_run(forked)
        return RunAccepted(run_id=forked, workflow=record.workflow, engine=record.engine)

    @routes.post("/runs/{run_id}/cancel", summary="Cancel a queued, running or waiting run")
    def cancel(run_id: IdPath) -> RunCancelled:
        return RunCancelled(run_id=run_id, outcome=cancel_run(services.runs, run_id))

    return routes


def _definition(services: ServerServices, request: StartRun) -> WorkflowDefinition:
    """The workflow a start request names (a shipped one) or carries (loaded as
    `workbench validate` loads a file)."""
    from engine.loader import load_workflow_text

    if request.definition is not None:
        register_steps(services.workspace)
        return load_workflow_text(request.definition, source=request.filename)
    assert request.workflow is not None
    found = services.shipped.get(request.workflow)
    if found is None:
        raise ApiError(
            404,
            f"no shipped workflow {request.workflow!r}; GET /v1/workflows lists them, or send"
            " the YAML as definition",
        )
    return found


def _addressed(store: PostgresRunStore, run_id: str, request: ResumeRun) -> dict[str, Answer]:
    """Each answer of ``request`` by the id of the pending interrupt it goes to: keyed by
    interrupt id or step id, or ``""`` for the one pending interrupt."""
    pending = store.pending_interrupts(run_id)
    addressed: dict[str, Answer] = {}
    for key, given in request.answers.items():
        matches = [
            record
            for record in pending
            if key in (record.interrupt_id, record.step_id) or (key == "" and len(pending) == 1)
        ]
        if len(matches) != 1:
            waiting = ", ".join(f"{r.step_id} ({r.interrupt_id})" for r in pending) or "none"
            raise ApiError(
                400,
                f"answer {key!r} fits {len(matches)} pending prompts of run {run_id}; address"
                f" one by step or interrupt id (pending: {waiting})",
            )
        addressed[matches[0].interrupt_id] = given
    return addressed
