"""Breaker state machine on an injected clock: every transition, cooldown growth and cap, leases, OPEN failures."""

from __future__ import annotations

import pytest

from router.breaker import BreakerPolicy, CircuitBreaker, Transition
from router.clock import ManualClock
from router.errors import ErrorClass
from router.models import BreakerState

CLOSED, OPEN, HALF_OPEN = BreakerState.CLOSED, BreakerState.OPEN, BreakerState.HALF_OPEN


def make(clock: ManualClock, **policy: float) -> tuple[CircuitBreaker, list[Transition]]:
    seen: list[Transition] = []
    return CircuitBreaker(BreakerPolicy(**policy), clock, seen.append), seen  # type: ignore[arg-type]


def trip(breaker: CircuitBreaker, error: ErrorClass = ErrorClass.SERVER, n: int = 5) -> None:
    for _ in range(n):
        breaker.record_failure(error)


def test_starts_closed_and_successes_keep_it_closed(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    for _ in range(50):
        breaker.record_success()
    assert breaker.state is CLOSED and seen == []


def test_five_consecutive_failures_trip(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    trip(breaker, n=4)
    assert breaker.state is CLOSED
    breaker.record_failure(ErrorClass.SERVER)
    assert breaker.state is OPEN
    assert [(t.old, t.new) for t in seen] == [(CLOSED, OPEN)]
    assert breaker.cooldown_remaining() == pytest.approx(30.0)


def test_a_success_resets_the_consecutive_count(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker, n=4)
    breaker.record_success()
    trip(breaker, n=4)
    assert breaker.state is CLOSED


def test_failure_rate_over_the_window_trips(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    # alternate: never 5 in a row, but 50 % of 10 calls within 60 s
    for _ in range(5):
        breaker.record_success()
        clock.advance(1)
        breaker.record_failure(ErrorClass.SERVER)
        clock.advance(1)
    assert breaker.state is OPEN
    assert "failure rate" in seen[-1].reason


def test_failure_rate_needs_ten_calls_in_the_last_minute(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    for _ in range(5):
        breaker.record_success()
        clock.advance(7)
        breaker.record_failure(ErrorClass.SERVER)
        clock.advance(7)  # 10 calls spread over 70 s: fewer than 10 inside any 60 s
    assert breaker.state is CLOSED


def test_429_trips_at_once_and_honours_retry_after_exactly(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    breaker.record_failure(ErrorClass.RATE_LIMIT, retry_after_s=2.0)
    assert breaker.state is OPEN
    assert breaker.cooldown_remaining() == pytest.approx(2.0)
    clock.advance(1.99)
    assert breaker.state is OPEN
    clock.advance(0.02)
    assert breaker.state is HALF_OPEN


def test_429_without_retry_after_uses_the_rate_limit_base(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    breaker.record_failure(ErrorClass.RATE_LIMIT)
    assert breaker.cooldown_remaining() == pytest.approx(120.0)


def test_timeouts_use_the_timeout_base(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker, ErrorClass.TIMEOUT)
    assert breaker.cooldown_remaining() == pytest.approx(60.0)


def test_quota_is_a_long_cooldown(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    breaker.record_failure(ErrorClass.QUOTA)
    assert breaker.cooldown_remaining() == pytest.approx(600.0)


def test_non_breaker_classes_do_not_count(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    for _ in range(20):
        breaker.record_failure(ErrorClass.BAD_REQUEST)
        breaker.record_failure(ErrorClass.INVALID_OUTPUT)
    assert breaker.state is CLOSED


def test_open_to_half_open_to_closed_on_probe_success(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    trip(breaker)
    clock.advance(30)
    assert breaker.state is HALF_OPEN
    lease = breaker.acquire_probe()
    assert lease is not None
    breaker.record_success(lease)
    assert breaker.state is CLOSED
    assert [(t.old, t.new) for t in seen] == [
        (CLOSED, OPEN),
        (OPEN, HALF_OPEN),
        (HALF_OPEN, CLOSED),
    ]


def test_failed_probe_reopens_with_grown_cooldown_up_to_the_cap(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    expected = [30.0 * 1.5**n for n in range(1, 12)]
    cooldowns = []
    for _ in expected:
        clock.advance(breaker.cooldown_remaining())
        lease = breaker.acquire_probe()
        assert lease is not None
        breaker.record_failure(ErrorClass.SERVER, lease=lease)
        assert breaker.state is OPEN
        cooldowns.append(breaker.cooldown_remaining())
    assert cooldowns == pytest.approx([min(600.0, c) for c in expected])
    assert cooldowns[-1] == 600.0


def test_recovery_resets_the_growth(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    clock.advance(30)
    lease = breaker.acquire_probe()
    breaker.record_failure(ErrorClass.SERVER, lease=lease)
    assert breaker.cooldown_remaining() == pytest.approx(45.0)
    clock.advance(45)
    breaker.record_success(breaker.acquire_probe())
    trip(breaker)
    assert breaker.cooldown_remaining() == pytest.approx(30.0)


def test_failures_while_open_do_not_extend_the_break(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    trip(breaker)
    clock.advance(20)
    for error in (ErrorClass.SERVER, ErrorClass.TIMEOUT, ErrorClass.RATE_LIMIT):
        breaker.record_failure(error, retry_after_s=500)
    breaker.record_success()  # a late success while OPEN does not close it either
    assert breaker.state is OPEN
    assert breaker.cooldown_remaining() == pytest.approx(10.0)
    assert len(seen) == 1


def test_only_one_probe_lease_at_a_time(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    clock.advance(30)
    first = breaker.acquire_probe()
    assert first is not None
    assert breaker.acquire_probe() is None
    assert not breaker.can_attempt()


def test_a_lost_probe_lease_expires(clock: ManualClock) -> None:
    breaker, _ = make(clock, probe_lease_s=15.0)
    trip(breaker)
    clock.advance(30)
    lost = breaker.acquire_probe()
    assert lost is not None
    clock.advance(14.9)
    assert breaker.acquire_probe() is None
    clock.advance(0.2)
    second = breaker.acquire_probe()
    assert second is not None and second.token != lost.token
    breaker.record_failure(
        ErrorClass.SERVER, lease=lost
    )  # the stale probe's result changes nothing
    assert breaker.state is HALF_OPEN
    breaker.record_success(second)
    assert breaker.state is CLOSED


def test_released_lease_can_be_taken_again(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    clock.advance(30)
    lease = breaker.acquire_probe()
    assert lease is not None
    breaker.release_probe(lease)
    assert breaker.acquire_probe() is not None


def test_non_probe_results_in_half_open_are_ignored(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    clock.advance(30)
    breaker.record_success()
    breaker.record_failure(ErrorClass.SERVER)
    assert breaker.state is HALF_OPEN


def test_force_open_and_restore(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    breaker.force_open(ErrorClass.PERMANENT, "misconfigured")
    assert breaker.state is OPEN and breaker.cooldown_remaining() == pytest.approx(600.0)
    other, _ = make(clock)
    other.restore(OPEN, 12.5, 2, "x", 1.0)
    assert other.state is OPEN and other.cooldown_remaining() == pytest.approx(12.5)
    clock.advance(12.5)
    assert other.state is HALF_OPEN
    lease = other.acquire_probe()
    other.record_failure(ErrorClass.SERVER, lease=lease)
    assert other.cooldown_remaining() == pytest.approx(30 * 1.5**2)


def test_wall_clock_jumps_do_not_move_cooldowns(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    clock.set_wall(clock.wall() + 3600)  # NTP step forward
    assert breaker.state is OPEN and breaker.cooldown_remaining() == pytest.approx(30.0)
    clock.set_wall(clock.wall() - 7200)  # and backward
    clock.advance(30)
    assert breaker.state is HALF_OPEN
