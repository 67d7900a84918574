"""Error classes of provider failures, and the exceptions the router raises.

A provider failure is reduced to an :class:`ErrorClass` from its status code and
body (never by matching message text), and each class carries its consequences:
whether the breaker counts it, whether it trips at once, whether it means the
provider is misconfigured, and whether the provider "accepted" the request for
adaptive throttling. Messages never contain request headers, URLs with
credentials or bodies, so no secret can leak through an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from plumbing.sqlite_files import SqliteFault, sqlite_fault
from router.ratelimit_headers import RateLimitInfo


class ErrorClass(StrEnum):
    RATE_LIMIT = "rate_limit"  # 429: honour Retry-After, trip at once
    QUOTA = "quota"  # spend cap / per-day quota: long cooldown
    OVERLOAD = "overload"  # Anthropic 529, 503 overloaded
    TIMEOUT = "timeout"  # 408, 504, client-side timeouts
    SERVER = "server"  # other 5xx
    CONNECTION = "connection"  # refused, reset, disconnected
    BAD_RESPONSE = "bad_response"  # 2xx with a body that is not the API's shape
    OVERSIZED = (
        "oversized"  # an answer past a size bound (router/bounded_read.py): hostile or broken
    )
    PERMANENT = "permanent"  # 401/403/404: misconfigured, never retried
    BAD_REQUEST = "bad_request"  # other 4xx: this request's fault, not the provider's
    INVALID_OUTPUT = "invalid_output"  # well-formed reply whose content fails the schema


@dataclass(frozen=True, slots=True)
class ClassTraits:
    counts_for_breaker: bool
    trips_at_once: bool
    misconfigures: bool
    accepted: bool  # did the provider accept the request (SRE adaptive throttling)?


TRAITS: dict[ErrorClass, ClassTraits] = {
    ErrorClass.RATE_LIMIT: ClassTraits(True, True, False, False),
    ErrorClass.QUOTA: ClassTraits(True, True, False, False),
    ErrorClass.OVERLOAD: ClassTraits(True, False, False, False),
    ErrorClass.TIMEOUT: ClassTraits(True, False, False, False),
    ErrorClass.SERVER: ClassTraits(True, False, False, False),
    ErrorClass.CONNECTION: ClassTraits(True, False, False, False),
    ErrorClass.BAD_RESPONSE: ClassTraits(True, False, False, True),
    ErrorClass.OVERSIZED: ClassTraits(True, True, False, True),
    ErrorClass.PERMANENT: ClassTraits(False, False, True, True),
    ErrorClass.BAD_REQUEST: ClassTraits(False, False, False, True),
    ErrorClass.INVALID_OUTPUT: ClassTraits(False, False, False, True),
}


class ProviderCallError(Exception):
    """A classified failure of one provider call. Safe to log: holds no secret."""

    def __init__(
        self,
        error_class: ErrorClass,
        detail: str,
        *,
        status: int | None = None,
        rate_limits: RateLimitInfo | None = None,
    ) -> None:
        super().__init__(f"{error_class.value}: {detail}")
        self.error_class = error_class
        self.detail = detail
        self.status = status
        self.rate_limits = rate_limits or RateLimitInfo()

    @property
    def retry_after_s(self) -> float | None:
        return self.rate_limits.retry_after_s


class RouterError(Exception):
    """Base of every error ``SmartModelRouter.complete`` raises."""


class NoHandlerError(RouterError):
    """No remote provider answered and the built-in provider has no handler for the task."""

    def __init__(self, task: str, tried: int) -> None:
        super().__init__(
            f"no provider could answer task {task!r}: {tried} remote attempt(s) failed or were skipped "
            f"and the built-in provider has no handler for it — register one with "
            f"TaskHandlerRegistry.register({task!r}, handler) or configure a provider"
        )
        self.task = task


class BuiltinHandlerError(RouterError):
    """The built-in provider's handler for a task raised or returned something unusable."""

    def __init__(self, task: str, reason: str) -> None:
        super().__init__(f"the built-in handler for task {task!r} failed: {reason}")
        self.task = task


class RouterClosedError(RouterError):
    def __init__(self) -> None:
        super().__init__("the router is closed")


class StatsFileError(Exception):
    """The shared provider-statistics file cannot be opened; ``str()`` is one line naming it and the remedy."""

    def __init__(self, path: Path, error: BaseException) -> None:
        super().__init__(
            f"{path}: cannot open the provider statistics ({error}) — {_remedy(error, path)}"
        )


def _remedy(error: BaseException, path: Path) -> str:
    """What to do, by the fault: only a damaged or foreign file should be deleted."""
    fault = sqlite_fault(error, path)
    if fault is SqliteFault.READ_ONLY:
        return "make the file and its folder writable, or choose another --workspace"
    if fault is SqliteFault.LOCKED:
        return "another process holds it locked: let it finish (or stop it), then try again"
    if fault is SqliteFault.FULL:
        return "its disk is full: free some space on it, then try again"
    return "it holds only provider health history: delete it and the router starts a new one"
