"""The run API's reading routes: runs, their steps, events (a page, or live as SSE), journal,
prompts, reports, providers' health and the shipped workflows.

Store reads are synchronous, so these routes are plain functions, which FastAPI runs in its
thread pool; the event stream is asynchronous and reads the store in a worker thread.
"""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import APIRouter, Header, Path, Query
from fastapi.responses import PlainTextResponse
from sse_starlette import EventSourceResponse

from engine.store import InterruptRecord, RunInputs, RunRecord, StepResult
from router.models import ProviderSnapshot
from tui.server.errors import ApiError
from tui.server.schemas import EventsPage, JournalCall, WorkflowInfo
from tui.server.services import ServerServices
from tui.server.stream import PING_S, parse_last_event_id, run_events

IdPath = Annotated[str, Path(max_length=200)]
MAX_PAGE = 5000
SEND_TIMEOUT_S = 30.0
"""A client that takes no event for this long is cut off (it reconnects with its last id)."""


def reading_routes(services: ServerServices) -> APIRouter:
    routes = APIRouter(prefix="/v1")

    @routes.get("/workflows", summary="The shipped workflows a run may name")
    def workflows() -> list[WorkflowInfo]:
        return [
            WorkflowInfo(name=name, description=wf.description, inputs=wf.inputs)
            for name, wf in sorted(services.shipped.items())
        ]

    @routes.get("/runs", summary="The most recent runs, newest first, with their inputs")
    def list_runs(limit: Annotated[int, Query(ge=1, le=10_000)] = 50) -> list[RunInputs]:
        return services.runs.list_runs_with_inputs(limit)

    @routes.get("/runs/{run_id}", summary="One run: its record, definition, inputs and outputs")
    def get_run(run_id: IdPath) -> RunRecord:
        return services.runs.get_run(run_id)

    @routes.get("/runs/{run_id}/steps", summary="Each step's latest result and its history")
    def steps(run_id: IdPath) -> dict[str, StepResult]:
        services.runs.get_run(run_id)
        return services.runs.step_results(run_id)

    @routes.get("/runs/{run_id}/events", summary="A page of the run's stored events")
    def events(
        run_id: IdPath,
        after: Annotated[int, Query(ge=0, description="the last seq already read")] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1000,
    ) -> EventsPage:
        services.runs.get_run(run_id)
        found = services.runs.events(run_id, after)
        return EventsPage(events=found[:limit], more=len(found) > limit)

    @routes.get(
        "/runs/{run_id}/events/stream",
        summary="The run's events live, as Server-Sent Events resumable by Last-Event-ID",
        response_class=EventSourceResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def stream(
        run_id: IdPath,
        after: Annotated[int | None, Query(ge=0, description="resume after this seq")] = None,
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    ) -> EventSourceResponse:
        try:
            start = parse_last_event_id(last_event_id, after)
        except ValueError as error:
            raise ApiError(400, str(error)) from None
        store = services.runs
        await anyio.to_thread.run_sync(store.get_run, run_id)
        assert services.feed is not None
        if services.feed.watching >= services.max_streams:
            raise ApiError(
                503,
                f"this server follows {services.max_streams} event streams already, its most"
                " (workbench server --max-streams); close one, or read pages of events from"
                " GET /v1/runs/RUN/events",
            )
        return EventSourceResponse(
            run_events(services.feed, store.events, run_id, start, services.poll_s),
            ping=PING_S,
            send_timeout=SEND_TIMEOUT_S,
        )

    @routes.get("/runs/{run_id}/journal", summary="One step pass's journaled calls, in order")
    def journal(
        run_id: IdPath,
        step: Annotated[str, Query(max_length=200)],
        iteration: Annotated[int, Query(ge=0)] = 0,
    ) -> list[JournalCall]:
        services.runs.get_run(run_id)
        return [
            JournalCall(index=index, entry=entry)
            for index, entry in services.runs.journal_entries(run_id, step, iteration)
        ]

    @routes.get("/runs/{run_id}/interrupts", summary="The run's prompts, answered or not")
    def interrupts(run_id: IdPath) -> list[InterruptRecord]:
        services.runs.get_run(run_id)
        return services.runs.interrupts(run_id)

    @routes.get("/interrupts/{interrupt_id}", summary="One prompt")
    def interrupt(interrupt_id: IdPath) -> InterruptRecord:
        record = services.runs.get_interrupt(interrupt_id)
        if record is None:
            raise LookupError(f"no interrupt {interrupt_id!r} in the run store")
        return record

    @routes.get(
        "/runs/{run_id}/report",
        summary="A research run's report (Markdown)",
        response_class=PlainTextResponse,
        responses={200: {"content": {"text/markdown": {}}}},
    )
    def report(run_id: IdPath) -> PlainTextResponse:
        record = services.runs.get_run(run_id)
        text = record.outputs.get("report")
        if not isinstance(text, str) or not text:
            raise ApiError(
                404,
                f"run {run_id} has no report (it is {record.status.value}; a research run's"
                " report is its final step's output)",
            )
        return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")

    @routes.get("/providers", summary="Every provider's health, breakers shared by all workers")
    async def providers() -> list[ProviderSnapshot]:
        router = services.router
        assert router is not None
        await router.sync_shared_state()
        return router.snapshot()

    return routes
