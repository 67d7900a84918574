"""The built-in provider: always available, last in every chain (DESIGN §7); and its place in
the router (:class:`BuiltinFallback`: the answer as a response, its metrics, rows and snapshot).

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

from router.clock import Clock
from router.errors import BuiltinHandlerError, NoHandlerError
from router.metrics import ProviderMetrics
from router.models import (
    Attempt,
    BreakerState,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ProviderSnapshot,
    Usage,
)
from router.stats import CallRecord, StatsRecorder, StoredProvider
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


class BuiltinFallback:
    """The built-in provider at the end of every chain: its answer as a response, and its
    bookkeeping (metrics, stats rows, snapshot). ``on_change`` tells subscribers it changed."""

    def __init__(
        self,
        provider: BuiltinProvider,
        clock: Clock,
        metrics: ProviderMetrics,
        recorder: StatsRecorder | None,
        on_change: Callable[[], None],
    ) -> None:
        self.builtin = provider
        self.clock = clock
        self.metrics = metrics
        self._recorder = recorder
        self._on_change = on_change

    async def answer(
        self, req: ChatRequest, had_remote: bool, attempts: list[Attempt], start: float
    ) -> ChatResponse:
        """The built-in's answer to ``req`` after the chain's ``attempts``; ``degraded`` (and a
        fallback) when remote providers were in the chain."""
        if not self.builtin.can_answer(req.task):
            raise NoHandlerError(
                req.task, sum(1 for a in attempts if a.provider not in ("router",))
            )
        began = self.clock.monotonic()
        try:
            content, parsed = await self.builtin.answer(req)
        except BuiltinHandlerError:
            self.record(False, None)
            raise
        latency = self.clock.monotonic() - began
        self.record(True, latency, fallback=had_remote)
        attempts.append(
            Attempt(
                provider=BUILTIN_NAME, model=BUILTIN_MODEL, tier=0, outcome="ok", latency_s=latency
            )
        )
        return ChatResponse(
            content=content,
            parsed=parsed,
            provider=BUILTIN_NAME,
            model=BUILTIN_MODEL,
            tier=0,
            usage=Usage(),
            latency_s=self.clock.monotonic() - start,
            degraded=had_remote,
            fallback=had_remote,
            attempts=attempts,
        )

    def restore(self, stored: StoredProvider) -> None:
        """Start from what the stats file kept of the built-in provider."""
        self.metrics.seed(
            stored.recent,
            (stored.totals.requests, stored.totals.successes, stored.totals.failures),
            fallbacks=stored.totals.fallbacks,
        )

    def record(self, ok: bool, latency: float | None, *, fallback: bool = False) -> None:
        self.metrics.record(ok, latency)
        self.metrics.fallback_total += fallback
        if self._recorder is not None:
            self._recorder.add_call(
                CallRecord(
                    BUILTIN_NAME,
                    ok,
                    latency,
                    None if ok else "handler_error",
                    0,
                    0,
                    self.clock.wall(),
                    fallback=fallback,
                )
            )
        self._on_change()

    def snapshot(self) -> ProviderSnapshot:
        metrics = self.metrics
        latency = metrics.latency_summary()
        return ProviderSnapshot(
            name=BUILTIN_NAME,
            kind=BUILTIN_KIND,
            state=BreakerState.CLOSED,
            success_rate=metrics.success_rate(),
            health_score=round(metrics.health_score(), 4),
            ema_latency_s=latency.ema,
            p50_latency_s=latency.p50,
            p95_latency_s=latency.p95,
            p99_latency_s=latency.p99,
            recent_latencies_s=latency.recent,
            in_flight=self.builtin.in_flight,
            bulkhead_size=self.builtin.concurrency,
            requests_total=metrics.requests_total,
            successes_total=metrics.successes_total,
            failures_total=metrics.failures_total,
            fallback_total=metrics.fallback_total,
            models={0: BUILTIN_MODEL},
        )
