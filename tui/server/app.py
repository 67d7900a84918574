"""The run API as an ASGI application (FastAPI): every route but the health check behind the
bearer token, request bodies bounded, every error one line of JSON, the OpenAPI document at
``/openapi.json``.

No interactive documentation page is served: FastAPI's loads its scripts from a CDN, and
nothing here reaches the network.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from tui.server.auth import TOKEN_ENV, authorised
from tui.server.control import control_routes
from tui.server.errors import install_handlers
from tui.server.limits import BodyLimit
from tui.server.reads import reading_routes
from tui.server.schemas import ErrorBody, Health
from tui.server.services import ServerServices

TITLE = "Research Workbench run API"
UNAUTHORISED = (
    "this server needs its token: send Authorization: Bearer <token>, the server's"
    f" ${TOKEN_ENV} (or the one it printed when it started)"
)
BEARER = HTTPBearer(auto_error=False, description=f"The server's ${TOKEN_ENV}.")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]
"""The bearer token a request carries, if any (named at module level: FastAPI resolves the
annotation by name)."""


def _version() -> str:
    try:
        return version("research-workbench")
    except PackageNotFoundError:
        return "0"


def create_app(services: ServerServices) -> FastAPI:
    """The API over ``services``, opened when the application starts and closed when it stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await services.start()
        try:
            yield
        finally:
            await services.stop()

    app = FastAPI(
        title=TITLE,
        version=_version(),
        summary="Start, follow, answer and steer workflow runs kept in the shared PostgreSQL"
        " store; workers run them.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        responses={
            401: {"model": ErrorBody, "description": "No token, or not this server's."},
            404: {"model": ErrorBody, "description": "No such run or prompt."},
            422: {"model": ErrorBody, "description": "The request does not fit the API."},
        },
    )
    install_handlers(app, services.workspace.root)
    app.add_middleware(BodyLimit)

    def token_required(
        credentials: Credentials,
    ) -> None:
        header = f"{credentials.scheme} {credentials.credentials}" if credentials else None
        if not authorised(header, services.token):
            raise HTTPException(401, UNAUTHORISED, headers={"WWW-Authenticate": "Bearer"})

    open_routes = APIRouter(prefix="/v1")

    @open_routes.get("/health", summary="Whether the server is up (no token needed)")
    def health() -> Health:
        feed = services.feed
        return Health(listening=feed is not None and feed.listening.is_set())

    app.include_router(open_routes)
    guarded = [Depends(token_required)]
    app.include_router(reading_routes(services), dependencies=guarded)
    app.include_router(control_routes(services), dependencies=guarded)
    return app
