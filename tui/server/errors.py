"""Errors as the run API answers them: JSON ``{"error": "<one line>"}`` with a status code.

The line is the one the CLI prints for the same failure (tui/failures.py's ``explain``: an
unknown run, a run another process drives, a store that cannot be used, a bad input — and a
bug, still one line). A workflow that does not load adds ``problems``: every problem as
``file:line:col: message``, as ``workbench validate`` lists them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from engine.errors import WorkflowLoadError
from tui.failures import UnexpectedFailure, explain


class ApiError(Exception):
    """A refusal the API words itself: ``status`` and one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _typed_statuses() -> list[tuple[type[BaseException], int]]:
    """The typed failures other packages raise, each with its HTTP status."""
    from engine.lifecycle import RunNotResumable
    from engine.run_inputs import InputError
    from engine.store import InterruptClosed, RunOwned
    from engine.time_travel import ForkError
    from plumbing.postgres import DatabaseError
    from tui.worker.queue import NotQueueable

    return [
        (ApiError, 400),
        (WorkflowLoadError, 400),
        (LookupError, 404),
        (RunOwned, 409),
        (InterruptClosed, 409),
        (RunNotResumable, 409),
        (InputError, 400),
        (ForkError, 400),
        (NotQueueable, 409),
        (DatabaseError, 503),
    ]


def _status_of(error: BaseException) -> int:
    """The HTTP status of a typed failure (500: a bug)."""
    return next((status for kind, status in _typed_statuses() if isinstance(error, kind)), 500)


def error_body(message: str, **extra: Any) -> dict[str, Any]:
    return {"error": " ".join(message.split()), **extra}


def failure_response(error: BaseException, workspace: Path) -> JSONResponse:
    """The answer to a failure met while serving a request."""
    if isinstance(error, ApiError):
        return JSONResponse(error_body(error.message), status_code=error.status)
    if isinstance(error, WorkflowLoadError):
        lines = [str(problem) for problem in error.problems]
        return JSONResponse(error_body(lines[0], problems=lines), status_code=400)
    if isinstance(error, LookupError):  # an unknown run, interrupt or step
        return JSONResponse(error_body(_first_line(error)), status_code=404)
    status = _status_of(error)
    failure = explain(error, workspace)
    if isinstance(failure, UnexpectedFailure) and status != 500:
        # a typed failure the CLI has no wording of its own for: its own line says it
        return JSONResponse(error_body(_first_line(error)), status_code=status)
    return JSONResponse(error_body(failure.message), status_code=status)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().strip("'\"")
    return text.splitlines()[0] if text else type(error).__name__


def validation_message(error: RequestValidationError) -> str:
    """A request that does not fit the API's models, in one line: the first field at fault."""
    problems = error.errors()
    if not problems:
        return "the request does not fit the API (see /openapi.json)"
    first = problems[0]
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body") or "request"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more} — see /openapi.json"


def install_handlers(app: Any, workspace: Path) -> None:
    """Every failure of a request answered as JSON with its one line."""

    async def on_validation(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return JSONResponse(error_body(validation_message(error)), status_code=422)

    async def on_http(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, HTTPException)
        detail = error.detail if isinstance(error.detail, str) else "refused"
        return JSONResponse(
            error_body(detail), status_code=error.status_code, headers=error.headers
        )

    async def on_failure(request: Request, error: Exception) -> JSONResponse:
        return failure_response(error, workspace)

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    # Each typed failure has a handler of its own: Starlette answers those and carries on,
    # while the catch-all (a bug) answers, then lets the error reach the log (and the
    # connection closes).
    for kind, _ in _typed_statuses():
        app.add_exception_handler(kind, on_failure)
    app.add_exception_handler(Exception, on_failure)
