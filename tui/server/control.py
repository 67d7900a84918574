"""The run API's steering routes: answer a prompt (and let the run go on once nothing else
waits)."""

from __future__ import annotations

from fastapi import APIRouter

from engine.store import InterruptRecord
from tui.server.reads import answer_route
from tui.server.services import ServerServices


def control_routes(services: ServerServices) -> APIRouter:
    routes = APIRouter()

    def answered(record: InterruptRecord) -> None:
        return None

    routes.include_router(answer_route(services, answered))
    return routes
