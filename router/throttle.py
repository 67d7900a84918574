"""Client-side adaptive throttling (Google SRE book, "Handling Overload").

Over a sliding window (2 minutes) count ``requests`` (calls the router sent)
and ``accepts`` (calls the provider accepted). Before sending, reject locally
with probability ``max(0, (requests - K * accepts) / (requests + 1))``, K = 2.
A request is counted when it is sent (:meth:`begin`), before its answer, and
settled when the answer comes (:meth:`settle`). The router's own rejections
are never counted, as requests or as provider failures.

One adaptation for LLM traffic: calls still in flight are left out of the
formula until they settle. The SRE book's services answer in milliseconds, so
pending calls are a rounding error there; LLM calls take seconds, and counting
a burst of pending calls as not-accepted would throttle every burst at
start-up before a single answer could arrive.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from dataclasses import dataclass

from router.clock import Clock


@dataclass(frozen=True, slots=True)
class ThrottleTicket:
    slot_start: float


class AdaptiveThrottle:
    def __init__(
        self,
        clock: Clock,
        *,
        k: float = 2.0,
        window_s: float = 120.0,
        rng: random.Random | None = None,
        slot_s: float = 1.0,
    ) -> None:
        self._clock = clock
        self.k = k
        self.window_s = window_s
        self._slot_s = slot_s
        self._rng = rng or random.Random()
        self._slots: deque[list[float]] = deque()  # [slot_start, requests, accepts, pending]
        self._by_start: dict[float, list[float]] = {}
        self._requests = 0.0
        self._accepts = 0.0
        self._pending = 0.0
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        horizon = now - self.window_s
        while self._slots and self._slots[0][0] + self._slot_s <= horizon:
            start, requests, accepts, pending = self._slots.popleft()
            del self._by_start[start]
            self._requests -= requests
            self._accepts -= accepts
            self._pending -= pending

    def _slot(self, now: float) -> list[float]:
        start = now - (now % self._slot_s)
        if not self._slots or self._slots[-1][0] != start:
            slot = [start, 0.0, 0.0, 0.0]
            self._slots.append(slot)
            self._by_start[start] = slot
        return self._slots[-1]

    def reject_probability(self) -> float:
        with self._lock:
            self._expire(self._clock.monotonic())
            settled = self._requests - self._pending
            return max(0.0, (settled - self.k * self._accepts) / (settled + 1.0))

    def should_reject(self) -> bool:
        p = self.reject_probability()
        return p > 0.0 and self._rng.random() < p

    def begin(self) -> ThrottleTicket:
        """Count a call about to be sent."""
        with self._lock:
            now = self._clock.monotonic()
            self._expire(now)
            slot = self._slot(now)
            slot[1] += 1
            slot[3] += 1
            self._requests += 1
            self._pending += 1
            return ThrottleTicket(slot[0])

    def settle(self, ticket: ThrottleTicket, accepted: bool) -> None:
        """The call's answer came: accepted by the provider, or not (overload, 5xx, timeout...)."""
        with self._lock:
            self._expire(self._clock.monotonic())
            slot = self._by_start.get(ticket.slot_start)
            if slot is None:
                return  # the call outlived the window; its request is already forgotten
            slot[3] -= 1
            self._pending -= 1
            if accepted:
                slot[2] += 1
                self._accepts += 1

    def cancel(self, ticket: ThrottleTicket) -> None:
        """The call was abandoned before any answer (cancelled): forget it was ever counted."""
        with self._lock:
            self._expire(self._clock.monotonic())
            slot = self._by_start.get(ticket.slot_start)
            if slot is None:
                return
            slot[1] -= 1
            slot[3] -= 1
            self._requests -= 1
            self._pending -= 1

    def counts(self) -> tuple[int, int]:
        """(requests, accepts) in the window, pending calls included in requests."""
        with self._lock:
            self._expire(self._clock.monotonic())
            return int(self._requests), int(self._accepts)
