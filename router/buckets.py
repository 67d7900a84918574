"""Dual RPM/TPM token buckets per provider (ADR-002 §E).

A request reserves one request token and an estimate of its tokens *before*
it is sent, and the reservation is reconciled with the usage the API reports
afterwards. Every response's rate-limit headers clamp the buckets to what the
provider says is left, and ``remaining: 0`` with a reset time holds the
bucket empty until that reset. The buckets never block: ``eta`` says how long
until a request would fit, so selection can route around a full provider.

A limit that is neither configured nor reported is unknown, and an unknown
bucket never limits.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from router.clock import Clock
from router.ratelimit_headers import LimitReading, RateLimitInfo


class TokenBucket:
    """Capacity ``limit`` per minute, refilled continuously; may go negative after a reconcile."""

    def __init__(self, limit: int | None, clock: Clock) -> None:
        self._clock = clock
        self.limit = limit
        self._level = float(limit) if limit else 0.0
        self._stamp = clock.monotonic()
        self._blocked_until = 0.0
        self._learnt = False  # the limit was inferred from ``remaining`` readings alone

    @property
    def known(self) -> bool:
        return self.limit is not None and self.limit > 0

    def _refill(self, now: float) -> None:
        stamp = self._stamp
        if now > stamp:
            limit = self.limit
            if limit is not None and limit > 0:
                self._level = min(float(limit), self._level + (now - stamp) * limit / 60.0)
            self._stamp = now

    def level(self, now: float | None = None) -> float | None:
        """Tokens free at ``now`` (default: the clock's; the router passes one reading to many
        calls); ``None`` when the limit is unknown."""
        if not self.known:
            return None
        self._refill(self._clock.monotonic() if now is None else now)
        return self._level

    def free_share(self, now: float) -> float | None:
        """The share of the limit free at ``now`` (0..1); ``None`` when the limit is unknown."""
        limit = self.limit
        if limit is None or limit <= 0:
            return None
        self._refill(now)
        return max(0.0, self._level) / limit

    def eta(self, amount: float, now: float | None = None) -> float:
        """Seconds until ``amount`` fits (0 = now). An amount above the limit waits for a full bucket."""
        if now is None:
            now = self._clock.monotonic()
        wait_block = max(0.0, self._blocked_until - now)
        limit = self.limit
        if limit is None or limit <= 0:
            return wait_block
        self._refill(now)
        need = min(amount, float(limit)) - self._level
        wait_refill = 0.0 if need <= 0 else need * 60.0 / limit
        return max(wait_block, wait_refill)

    def take(self, amount: float, now: float | None = None) -> None:
        if self.known:
            self._refill(self._clock.monotonic() if now is None else now)
            self._level -= amount

    def give_back(self, amount: float) -> None:
        if self.known:
            assert self.limit is not None
            self._level = min(float(self.limit), self._level + amount)

    def block_for(self, seconds: float) -> None:
        self._blocked_until = max(self._blocked_until, self._clock.monotonic() + seconds)

    def clamp(self, reading: LimitReading) -> None:
        """Adopt what the provider reported: its limit, and no more than its remaining.

        A provider that reports only ``remaining`` (Azure) teaches the limit from it: the
        largest ``remaining`` seen is the floor of the real limit, so a later, larger reading
        raises the limit — and the level with it — instead of sticking at the first one.
        """
        now = self._clock.monotonic()
        if reading.limit is not None and reading.limit > 0 and reading.limit != self.limit:
            old_known = self.known
            self.limit = reading.limit
            self._learnt = False
            if not old_known:
                self._level = float(reading.limit)
                self._stamp = now
        if reading.remaining is not None:
            if reading.limit is None and (
                self.limit is None or (self._learnt and reading.remaining > self.limit)
            ):
                self.limit = max(reading.remaining, 1)
                self._learnt = True
                self._level = float(reading.remaining)
                self._stamp = now
            elif self._learnt and reading.limit is None:
                self._refill(now)
                self._level = float(reading.remaining)  # the provider's count is the truth
            else:
                self._refill(now)
                self._level = min(self._level, float(reading.remaining))
            if reading.remaining == 0 and reading.reset_s is not None:
                self.block_for(reading.reset_s)


@dataclass(frozen=True, slots=True)
class Reservation:
    tokens: int


class DualBucket:
    """The RPM and TPM buckets of one provider."""

    def __init__(self, rpm: int | None, tpm: int | None, clock: Clock) -> None:
        self.requests = TokenBucket(rpm, clock)
        self.tokens = TokenBucket(tpm, clock)
        self._clock = clock
        self._lock = threading.Lock()

    def eta(self, estimated_tokens: int) -> float:
        with self._lock:
            now = self._clock.monotonic()
            return max(self.requests.eta(1, now), self.tokens.eta(estimated_tokens, now))

    def try_reserve(self, estimated_tokens: int) -> Reservation | None:
        with self._lock:
            now = self._clock.monotonic()
            if self.requests.eta(1, now) > 0 or self.tokens.eta(estimated_tokens, now) > 0:
                return None
            self.requests.take(1, now)
            self.tokens.take(estimated_tokens, now)
            return Reservation(estimated_tokens)

    def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        """Settle a reservation: refund an over-estimate, charge an under-estimate."""
        with self._lock:
            difference = reservation.tokens - actual_tokens
            if difference > 0:
                self.tokens.give_back(difference)
            elif difference < 0:
                self.tokens.take(-difference)

    def apply(self, info: RateLimitInfo) -> None:
        with self._lock:
            self.requests.clamp(info.requests)
            self.tokens.clamp(info.tokens)
            if info.retry_after_s is not None:
                self.requests.block_for(info.retry_after_s)

    def headroom(self) -> tuple[int | None, int | None, int | None, int | None]:
        """(rpm remaining, rpm limit, tpm remaining, tpm limit); ``None`` where unknown."""
        with self._lock:
            r, t = self.requests.level(), self.tokens.level()
            return (
                None if r is None else max(0, int(r)),
                self.requests.limit if self.requests.known else None,
                None if t is None else max(0, int(t)),
                self.tokens.limit if self.tokens.known else None,
            )

    def capacity_fraction(self) -> float:
        """Share of the tighter bucket still free (1.0 when nothing is known)."""
        with self._lock:
            now = self._clock.monotonic()
            requests, tokens = self.requests.free_share(now), self.tokens.free_share(now)
        if requests is None:
            return 1.0 if tokens is None else tokens
        return requests if tokens is None else min(requests, tokens)
