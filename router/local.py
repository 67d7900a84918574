"""The built-in provider: always available, last in every chain (DESIGN §7).

It answers a request's ``task`` by calling the handler registered for that
task. The composition root fills the registry (research registers its
extractive model), so ``router/`` never imports research. A handler is a plain
synchronous callable; a ``dict`` or pydantic model it returns is sent back as
JSON content, and validated against the request's ``response_schema``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from router.errors import BuiltinHandlerError
from router.models import ChatMessage, ChatRequest
from router.wire import encode_json, strip_code_fence

HandlerResult = str | dict[str, Any] | BaseModel
TaskHandler = Callable[[ChatRequest], HandlerResult]
BUILTIN_NAME = "builtin"
BUILTIN_KIND = "local"
BUILTIN_MODEL = "builtin-extractive"


class TaskHandlerRegistry:
    """Task name → handler. Thread-safe: research may register while the app starts."""

    def __init__(self) -> None:
        self._handlers: dict[str, TaskHandler] = {}
        self._lock = threading.Lock()

    def register(self, task: str, handler: TaskHandler, *, replace: bool = False) -> None:
        if not task:
            raise ValueError("a task name is required")
        if not callable(handler):
            raise TypeError(f"the handler for task {task!r} is not callable")
        with self._lock:
            if task in self._handlers and not replace:
                raise ValueError(
                    f"task {task!r} already has a handler; pass replace=True to swap it"
                )
            self._handlers[task] = handler

    def get(self, task: str) -> TaskHandler | None:
        return self._handlers.get(task)

    def __contains__(self, task: object) -> bool:
        return task in self._handlers

    def tasks(self) -> list[str]:
        with self._lock:
            return sorted(self._handlers)

    def as_responder(self) -> Callable[[str, dict[str, Any], dict[str, Any]], str | dict[str, Any]]:
        """Adapt the registry to the fault server's responder signature ``(task, inputs, raw_body)``."""

        def respond(
            task: str, inputs: dict[str, Any], raw_body: dict[str, Any]
        ) -> str | dict[str, Any]:
            handler = self.get(task)
            if handler is None:
                return f"(no built-in handler for task {task!r})"
            request = ChatRequest(
                task=task,
                inputs=inputs,
                messages=[ChatMessage(role="user", content=encode_json(inputs))],
            )
            result = handler(request)
            if isinstance(result, BaseModel):
                return result.model_dump(mode="json")
            return result

        return respond


def encode_result(result: HandlerResult) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    if isinstance(result, dict):
        return encode_json(result)
    raise TypeError(f"returned {type(result).__name__}; return str, dict or a pydantic model")


class BuiltinProvider:
    name = BUILTIN_NAME
    kind = BUILTIN_KIND
    model = BUILTIN_MODEL

    def __init__(
        self, registry: TaskHandlerRegistry, *, concurrency: int = 8, in_thread: bool = True
    ) -> None:
        self.registry = registry
        self.in_thread = in_thread
        self.concurrency = concurrency
        self._semaphore: asyncio.Semaphore | None = None
        self.in_flight = 0

    def can_answer(self, task: str) -> bool:
        return task in self.registry

    async def answer(self, req: ChatRequest) -> tuple[str, Any | None]:
        """(content, parsed) for the request; raises :class:`BuiltinHandlerError` if the handler fails."""
        handler = self.registry.get(req.task)
        if handler is None:
            raise BuiltinHandlerError(req.task, "no handler registered")
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        async with self._semaphore:
            self.in_flight += 1
            try:
                result = await asyncio.to_thread(handler, req) if self.in_thread else handler(req)
            except Exception as exc:  # a handler bug must surface as a router error, with its type
                raise BuiltinHandlerError(
                    req.task, f"{type(exc).__name__} raised by the handler"
                ) from exc
            finally:
                self.in_flight -= 1
        try:
            content = encode_result(result)
        except TypeError as exc:
            raise BuiltinHandlerError(req.task, str(exc)) from None
        if req.response_schema is None:
            return content, None
        if isinstance(result, req.response_schema):
            return content, result
        try:
            return content, req.response_schema.model_validate_json(strip_code_fence(content))
        except ValidationError as exc:
            raise BuiltinHandlerError(
                req.task,
                f"its answer does not match {req.response_schema.__name__} ({exc.error_count()} error(s))",
            ) from None
