"""Health of each model of a provider, for answers that HTTP blames on the caller.

A 4xx other than 429 says the request was at fault, and an answer that fails
the request's schema says nothing about the transport — so neither counts for
the provider's breaker. But a provider can answer *every* request that way (a
reasoning deployment refusing ``max_tokens``, a server refusing the structured
output mode, a model too small to follow a schema): it must lose that model's
traffic, while one caller's malformed request must not.

The two are told apart by how many different requests fail: each model keeps
the fingerprints of the requests that failed on it in a row, and only when
``strikes`` *different* requests fail with no good answer in between does the
model's own breaker open (a caller repeating one bad request, however often,
is one request). The model breaker then follows the provider breaker's rules —
probes on the same jittered schedule, by a real request, and closes on the
first good answer.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

from router.breaker import BreakerPolicy, CircuitBreaker, ProbeLease, Transition
from router.clock import Clock
from router.errors import ErrorClass
from router.models import BreakerState, ChatRequest
from router.wire import encode_inputs


def request_fingerprint(req: ChatRequest) -> str:
    """Identifies a request by what it asks (task, messages, inputs), not by when it was sent."""
    digest = hashlib.blake2b(digest_size=12)
    digest.update(req.task.encode())
    for message in req.messages:
        digest.update(b"\0" + message.role.encode() + b"\0" + message.content.encode())
    digest.update(b"\0" + encode_inputs(req).encode())
    return digest.hexdigest()


class ModelHealth:
    def __init__(
        self,
        policy: BreakerPolicy,
        clock: Clock,
        rng: random.Random,
        strikes: int,
        on_transition: Callable[[str, Transition], None] | None = None,
    ) -> None:
        self._policy = policy
        self._clock = clock
        self._rng = rng
        self._strikes = strikes
        self._on_transition = on_transition
        self._breakers: dict[str, CircuitBreaker] = {}
        self._failing: dict[str, list[str]] = {}

    def get(self, model: str) -> CircuitBreaker | None:
        """The model's breaker if it ever answered badly (most never do: no cost on the hot path)."""
        return self._breakers.get(model)

    def breaker(self, model: str) -> CircuitBreaker:
        breaker = self._breakers.get(model)
        if breaker is None:
            notify = self._on_transition
            breaker = CircuitBreaker(
                self._policy,
                self._clock,
                None if notify is None else (lambda t: notify(model, t)),
                random.Random(self._rng.random()),
            )
            self._breakers[model] = breaker
        return breaker

    def record_good(self, model: str, lease: ProbeLease | None) -> None:
        self._failing.pop(model, None)
        if model in self._breakers:
            self._breakers[model].record_success(lease)

    def record_bad(
        self,
        model: str,
        fingerprint: str,
        error_class: ErrorClass,
        detail: str,
        lease: ProbeLease | None,
    ) -> None:
        breaker = self.breaker(model)
        if lease is not None:
            breaker.record_failure(error_class, lease=lease)
            return
        failing = self._failing.setdefault(model, [])
        if fingerprint not in failing:
            failing.append(fingerprint)
        if len(failing) >= self._strikes and breaker.state is BreakerState.CLOSED:
            failing.clear()
            breaker.force_open(error_class, f"{self._strikes} different requests failed: {detail}")

    def unhealthy(self) -> dict[str, str]:
        """Models whose breaker is not CLOSED, with the reason they were opened."""
        out: dict[str, str] = {}
        for model, breaker in self._breakers.items():
            view = breaker.view()
            if view.state is not BreakerState.CLOSED:
                out[model] = f"{view.state.value}: {view.open_reason or ''}".rstrip(": ")
        return out
