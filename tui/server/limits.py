"""A bound on request bodies: a request larger than :data:`MAX_BODY_BYTES` is refused with 413
before it is read whole.

Hand-written because neither Starlette nor uvicorn bounds a request body (uvicorn bounds
only the headers): a small ASGI wrapper that checks ``Content-Length`` and counts the bytes
of a body sent in chunks.
"""

from __future__ import annotations

import json
from typing import Any

from engine.loader import MAX_BYTES
from tui.server.errors import ApiError, error_body

MAX_BODY_BYTES = MAX_BYTES + 1_000_000
"""The largest workflow definition the loader reads, and room for the run's inputs."""

Scope = dict[str, Any]
Message = dict[str, Any]


def too_large_message(limit: int) -> str:
    return (
        f"the request body is larger than {limit // 1_000_000} MB, the most this server reads;"
        " send a smaller workflow or fewer inputs"
    )


class BodyTooLarge(ApiError):
    """Raised while the app reads the body: answered 413 by the API's error handler."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large_message(limit))


class BodyLimit:
    """ASGI middleware: 413 for a request body over ``limit`` bytes."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message: Message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps(error_body(too_large_message(self.limit))).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})
