"""A per-provider circuit breaker on monotonic time (ADR-002 §C, §D).

CLOSED trips to OPEN after ``consecutive_failures`` failures in a row, or when
the failure rate over the last ``window_calls`` calls reaches ``failure_rate``
with at least ``window_min_calls`` of them in the last ``window_s`` seconds, or
at once on a class that trips at once (429, quota). OPEN becomes HALF_OPEN when
its cooldown ends — checked lazily whenever the breaker is read. In HALF_OPEN
exactly one probe runs at a time: the probe holds a lease, and a lease that is
not returned in time expires so a lost probe cannot wedge the provider. The
caller sizes the lease to the probe's own timeouts (:meth:`acquire_probe`), so
a lease always outlives the probe that holds it. Results that arrive from
calls that started before the break (or from an expired lease) change
nothing: failures while OPEN do not extend the break.

Only a success of the path that failed closes the breaker: the router keeps
the lease through a health probe *and* the real call that follows it, and
reports success only when the real call answered. A failed probe is another
trip, so the trip count — and with it the cooldown — keeps growing for as long
as the provider keeps failing, whatever its health endpoint says.

Cooldowns are a ceiling, not the only interval. The ADR-002 cooldown of a trip
is base (failure 30 s, rate limit 120 s, timeout 60 s) x 1.5 per trip since the
last recovery, capped at 600 s; the breaker becomes HALF_OPEN — ready for a
probe — much sooner: after a delay drawn uniformly ("full jitter") between
``probe_min_s`` and ``probe_backoff_ratio`` x the time the outage has lasted,
never above the ceiling. Probing thus starts about a second after a trip and
backs off as the outage goes on (a 10 s outage is noticed within ~2 s of its
end, an hour-long one is probed every few minutes), with at most one probe per
``probe_min_s``. A Retry-After from the provider is honoured exactly, and
quota or misconfiguration breaks run their full cooldown: probing early cannot
help there.

Mutations hold a ``threading.Lock``: the router runs on one event loop, but
snapshots are read from the UI thread.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from router.clock import Clock
from router.errors import TRAITS, ErrorClass
from router.models import BreakerState


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    consecutive_failures: int = 5
    window_calls: int = 20
    window_min_calls: int = 10
    window_s: float = 60.0
    failure_rate: float = 0.5
    cooldown_failure_s: float = 30.0
    cooldown_rate_limit_s: float = 120.0
    cooldown_timeout_s: float = 60.0
    cooldown_quota_s: float = 600.0
    cooldown_misconfigured_s: float = 600.0
    multiplier: float = 1.5
    max_cooldown_s: float = 600.0
    max_retry_after_s: float = 3600.0
    probe_lease_s: float = 15.0
    probe_min_s: float = 1.0
    probe_backoff_ratio: float = 0.2

    def base_cooldown(self, error_class: ErrorClass) -> float:
        if error_class is ErrorClass.RATE_LIMIT:
            return self.cooldown_rate_limit_s
        if error_class is ErrorClass.TIMEOUT:
            return self.cooldown_timeout_s
        if error_class is ErrorClass.QUOTA:
            return self.cooldown_quota_s
        if error_class is ErrorClass.PERMANENT:
            return self.cooldown_misconfigured_s
        return self.cooldown_failure_s

    def cooldown(
        self, error_class: ErrorClass, prior_trips: int, retry_after_s: float | None
    ) -> float:
        """The break length for a trip; ``prior_trips`` counts trips since the last recovery."""
        if retry_after_s is not None and error_class in (
            ErrorClass.RATE_LIMIT,
            ErrorClass.OVERLOAD,
        ):
            return min(retry_after_s, self.max_retry_after_s)
        if error_class in (ErrorClass.QUOTA, ErrorClass.PERMANENT):
            base = self.base_cooldown(error_class)
            return max(base, min(retry_after_s or 0.0, self.max_retry_after_s))
        grown = self.base_cooldown(error_class) * self.multiplier ** max(0, prior_trips)
        return min(grown, self.max_cooldown_s)

    def probes_early(self, error_class: ErrorClass, retry_after_s: float | None) -> bool:
        """Whether a trip of this class is probed before its cooldown ends (see the module doc)."""
        if error_class in (ErrorClass.QUOTA, ErrorClass.PERMANENT):
            return False
        return not (
            retry_after_s is not None
            and error_class in (ErrorClass.RATE_LIMIT, ErrorClass.OVERLOAD)
        )

    def probe_delay(self, ceiling_s: float, outage_s: float, rng: random.Random) -> float:
        """Seconds until the next probe: full jitter up to a bound that grows with the outage."""
        bound = min(ceiling_s, max(self.probe_min_s, self.probe_backoff_ratio * outage_s))
        floor = min(self.probe_min_s, bound)
        return floor + rng.random() * (bound - floor)


@dataclass(frozen=True, slots=True)
class ProbeLease:
    token: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class Transition:
    old: BreakerState
    new: BreakerState
    reason: str
    at_monotonic: float
    at_wall: float
    model: str | None = None  # set for a model's breaker (router/model_health.py)


@dataclass(frozen=True, slots=True)
class BreakerView:
    """A consistent read of the breaker for snapshots and persistence."""

    state: BreakerState
    cooldown_remaining_s: float  # until the next probe may go (OPEN -> HALF_OPEN)
    ceiling_s: float  # the ADR-002 cooldown of the current trip, the longest the break may last
    consecutive_trips: int
    consecutive_failures: int
    open_reason: str | None
    changed_wall: float | None
    probe_in_flight: bool


class CircuitBreaker:
    _tokens = itertools.count(1)

    def __init__(
        self,
        policy: BreakerPolicy,
        clock: Clock,
        on_transition: Callable[[Transition], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._rng = rng or random.Random()
        self._on_transition = on_transition
        self._lock = threading.Lock()
        self._state = BreakerState.CLOSED
        self._open_until = 0.0
        self._ceiling = 0.0
        self._outage_began: float | None = None
        self._open_reason: str | None = None
        self._consecutive_failures = 0
        self._consecutive_trips = 0
        self._window: deque[tuple[float, bool]] = deque(maxlen=policy.window_calls)
        self._lease: ProbeLease | None = None
        self._changed_wall: float | None = None

    # --- reading -------------------------------------------------------------

    @property
    def state(self) -> BreakerState:
        if self._state is BreakerState.CLOSED:
            return BreakerState.CLOSED  # only OPEN changes on a read: the hot path takes no lock
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)
            state = self._state
        self._emit(transitions)
        return state

    def view(self) -> BreakerView:
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)
            now = self._clock.monotonic()
            view = BreakerView(
                state=self._state,
                cooldown_remaining_s=max(0.0, self._open_until - now)
                if self._state is BreakerState.OPEN
                else 0.0,
                ceiling_s=self._ceiling if self._state is not BreakerState.CLOSED else 0.0,
                consecutive_trips=self._consecutive_trips,
                consecutive_failures=self._consecutive_failures,
                open_reason=self._open_reason,
                changed_wall=self._changed_wall,
                probe_in_flight=self._lease is not None and self._lease.expires_at > now,
            )
        self._emit(transitions)
        return view

    def cooldown_remaining(self) -> float:
        return self.view().cooldown_remaining_s

    # --- admission -------------------------------------------------------------

    def can_attempt(self) -> bool:
        """Would a request be admitted now (CLOSED, or HALF_OPEN with no live probe)? Changes nothing."""
        if self._state is BreakerState.CLOSED:
            return True
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)  # OPEN may have become HALF_OPEN; nothing else changes
            allowed = self._state is BreakerState.HALF_OPEN and (
                self._lease is None or self._lease.expires_at <= self._clock.monotonic()
            )
        self._emit(transitions)
        return allowed

    def acquire_probe(self, probe_s: float = 0.0) -> ProbeLease | None:
        """The single probe lease of a HALF_OPEN breaker, or ``None`` (not HALF_OPEN, or a live probe holds it).

        ``probe_s`` is the longest the probe can take (the sum of its calls' timeouts): the
        lease lasts that long plus ``probe_lease_s``, so it never expires under a live probe.
        """
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)
            now = self._clock.monotonic()
            lease = None
            if self._state is BreakerState.HALF_OPEN and (
                self._lease is None or self._lease.expires_at <= now
            ):
                lease = ProbeLease(
                    next(self._tokens), now + max(0.0, probe_s) + self.policy.probe_lease_s
                )
                self._lease = lease
        self._emit(transitions)
        return lease

    def release_probe(self, lease: ProbeLease) -> None:
        """Give back a lease that was never used (the probe was not sent)."""
        with self._lock:
            if self._lease is not None and self._lease.token == lease.token:
                self._lease = None

    # --- outcomes -----------------------------------------------------------------

    def record_success(self, lease: ProbeLease | None = None) -> None:
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)
            now = self._clock.monotonic()
            if self._state is BreakerState.CLOSED and lease is None:
                self._consecutive_failures = 0
                self._window.append((now, True))
            elif self._state is BreakerState.HALF_OPEN and self._holds(lease):
                self._lease = None
                self._consecutive_failures = 0
                self._consecutive_trips = 0
                self._outage_began = None
                self._window.clear()
                self._open_reason = None
                self._move(BreakerState.CLOSED, "probe succeeded", transitions)
            # OPEN, or a stale result: the break is not affected.
        self._emit(transitions)

    def record_failure(
        self,
        error_class: ErrorClass,
        retry_after_s: float | None = None,
        lease: ProbeLease | None = None,
    ) -> None:
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)
            now = self._clock.monotonic()
            if self._state is BreakerState.HALF_OPEN and self._holds(lease):
                self._lease = None
                self._open(
                    error_class, retry_after_s, f"probe failed: {error_class.value}", transitions
                )
            elif (
                self._state is BreakerState.CLOSED
                and lease is None
                and TRAITS[error_class].counts_for_breaker
            ):
                self._consecutive_failures += 1
                self._window.append((now, False))
                reason = self._trip_reason(error_class, retry_after_s, now)
                if reason is not None:
                    self._open(error_class, retry_after_s, reason, transitions)
        self._emit(transitions)

    def force_open(
        self, error_class: ErrorClass, reason: str, retry_after_s: float | None = None
    ) -> None:
        """Open now whatever the state (a misconfigured provider); the cooldown follows the class."""
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)
            if self._state is not BreakerState.OPEN:
                self._lease = None
                self._open(error_class, retry_after_s, reason, transitions)
        self._emit(transitions)

    def restore(
        self,
        state: BreakerState,
        cooldown_remaining_s: float,
        consecutive_trips: int,
        open_reason: str | None,
        changed_wall: float | None,
    ) -> None:
        """Adopt persisted state (another run's break); HALF_OPEN comes back as an expired OPEN."""
        with self._lock:
            now = self._clock.monotonic()
            self._consecutive_trips = max(0, consecutive_trips)
            self._changed_wall = changed_wall
            if state is BreakerState.CLOSED:
                self._state = BreakerState.CLOSED
                self._open_reason = None
                self._outage_began = None
            else:
                self._state = BreakerState.OPEN
                self._open_until = now + max(0.0, cooldown_remaining_s)
                self._ceiling = max(0.0, cooldown_remaining_s)
                self._outage_began = now
                self._open_reason = open_reason

    def adopt_trip(
        self,
        cooldown_remaining_s: float,
        consecutive_trips: int,
        open_reason: str | None,
        changed_wall: float,
    ) -> bool:
        """Take over a trip another process recorded later than this breaker last changed.

        Only a CLOSED breaker adopts (an OPEN or probing one already avoids the provider and
        runs its own probes); returns whether it did.
        """
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)
            newer = self._changed_wall is None or changed_wall > self._changed_wall
            adopted = self._state is BreakerState.CLOSED and newer and cooldown_remaining_s > 0
            if adopted:
                now = self._clock.monotonic()
                self._consecutive_trips = max(self._consecutive_trips, consecutive_trips)
                self._consecutive_failures = 0
                self._open_until = now + cooldown_remaining_s
                self._ceiling = cooldown_remaining_s
                self._outage_began = now
                self._open_reason = open_reason
                self._move(
                    BreakerState.OPEN, f"tripped in another process: {open_reason}", transitions
                )
                self._changed_wall = changed_wall
        self._emit(transitions)
        return adopted

    def adopt_probe_outcome(
        self,
        state: BreakerState,
        cooldown_remaining_s: float,
        consecutive_trips: int,
        open_reason: str | None,
        changed_wall: float,
    ) -> bool:
        """Take the outcome of the probe another process sent while this breaker was HALF_OPEN
        (router/shared_probe.py): CLOSED closes it as a success would, OPEN re-opens it for
        what remains of that process's cooldown. Only a HALF_OPEN breaker with no live probe of
        its own adopts, and only an outcome no older than its own last change; returns whether it did.
        """
        transitions: list[Transition] = []
        with self._lock:
            self._refresh(transitions)
            now = self._clock.monotonic()
            adopted = (
                self._state is BreakerState.HALF_OPEN
                and (self._lease is None or self._lease.expires_at <= now)
                and (self._changed_wall is None or changed_wall >= self._changed_wall)
                and state in (BreakerState.OPEN, BreakerState.CLOSED)
            )
            if adopted:
                self._lease = None
                self._consecutive_failures = 0
                if state is BreakerState.CLOSED:
                    self._consecutive_trips = 0
                    self._outage_began = None
                    self._window.clear()
                    self._open_reason = None
                    self._move(
                        BreakerState.CLOSED, "probe succeeded in another process", transitions
                    )
                else:
                    remaining = max(0.0, cooldown_remaining_s)
                    self._consecutive_trips = max(self._consecutive_trips, consecutive_trips)
                    self._open_until = now + remaining
                    self._ceiling = max(self._ceiling, remaining)
                    self._open_reason = open_reason
                    self._move(
                        BreakerState.OPEN,
                        f"probe failed in another process: {open_reason};"
                        f" next probe in {remaining:.1f}s",
                        transitions,
                    )
                self._changed_wall = changed_wall
        self._emit(transitions)
        return adopted

    # --- internals ------------------------------------------------------------------

    def _holds(self, lease: ProbeLease | None) -> bool:
        return lease is not None and self._lease is not None and self._lease.token == lease.token

    def _trip_reason(
        self, error_class: ErrorClass, retry_after_s: float | None, now: float
    ) -> str | None:
        p = self.policy
        if TRAITS[error_class].trips_at_once or (
            error_class is ErrorClass.OVERLOAD and retry_after_s is not None
        ):
            return f"{error_class.value}"
        if self._consecutive_failures >= p.consecutive_failures:
            return f"{self._consecutive_failures} consecutive failures"
        recent = [ok for (t, ok) in self._window if now - t <= p.window_s]
        if len(recent) >= p.window_min_calls:
            failures = recent.count(False)
            if failures / len(recent) >= p.failure_rate:
                return f"failure rate {failures}/{len(recent)}"
        return None

    def _open(
        self,
        error_class: ErrorClass,
        retry_after_s: float | None,
        reason: str,
        transitions: list[Transition],
    ) -> None:
        policy = self.policy
        now = self._clock.monotonic()
        if self._outage_began is None:
            self._outage_began = now
        ceiling = policy.cooldown(error_class, self._consecutive_trips, retry_after_s)
        wait = ceiling
        if policy.probes_early(error_class, retry_after_s):
            wait = policy.probe_delay(ceiling, now - self._outage_began, self._rng)
        self._consecutive_trips += 1
        self._consecutive_failures = 0
        self._ceiling = ceiling
        self._open_until = now + wait
        self._open_reason = reason
        self._move(
            BreakerState.OPEN,
            f"{reason}; next probe in {wait:.1f}s (cooldown ceiling {ceiling:.1f}s)",
            transitions,
        )

    def _refresh(self, transitions: list[Transition]) -> None:
        if self._state is BreakerState.OPEN and self._clock.monotonic() >= self._open_until:
            self._lease = None
            self._move(BreakerState.HALF_OPEN, "cooldown over", transitions)

    def _move(self, new: BreakerState, reason: str, transitions: list[Transition]) -> None:
        old = self._state
        self._state = new
        self._changed_wall = self._clock.wall()
        transitions.append(
            Transition(old, new, reason, self._clock.monotonic(), self._changed_wall)
        )

    def _emit(self, transitions: list[Transition]) -> None:
        if self._on_transition is not None:
            for transition in transitions:
                self._on_transition(transition)
