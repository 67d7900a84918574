"""Dual RPM/TPM buckets (reserve, reconcile, header clamping, non-blocking ETA) and SRE adaptive throttling."""

from __future__ import annotations

import random

import pytest

from router.buckets import DualBucket, TokenBucket
from router.bulkhead import Bulkhead
from router.clock import ManualClock
from router.ratelimit_headers import LimitReading, RateLimitInfo
from router.throttle import AdaptiveThrottle


def test_unknown_limits_never_limit(clock: ManualClock) -> None:
    bucket = DualBucket(None, None, clock)
    for _ in range(10_000):
        assert bucket.try_reserve(10_000) is not None
    assert bucket.eta(10**9) == 0.0
    assert bucket.headroom() == (None, None, None, None)


def test_rpm_bucket_refills_continuously(clock: ManualClock) -> None:
    bucket = DualBucket(60, None, clock)
    for _ in range(60):
        assert bucket.try_reserve(1) is not None
    assert bucket.try_reserve(1) is None
    assert bucket.eta(1) == pytest.approx(1.0)  # 60 per minute: one a second
    clock.advance(0.5)
    assert bucket.eta(1) == pytest.approx(0.5)
    clock.advance(0.5)
    assert bucket.try_reserve(1) is not None


def test_reserve_then_reconcile_refunds_and_charges(clock: ManualClock) -> None:
    bucket = DualBucket(None, 1000, clock)
    reservation = bucket.try_reserve(600)
    assert reservation is not None
    assert (
        bucket.try_reserve(600) is None
    )  # 400 left: the estimate holds capacity while the call runs
    bucket.reconcile(reservation, 100)  # the call used less than estimated
    assert bucket.headroom()[2] == 900
    second = bucket.try_reserve(800)
    assert second is not None
    bucket.reconcile(second, 1000)  # and more than estimated: goes negative, ETA grows
    assert bucket.headroom()[2] == 0
    assert bucket.eta(100) == pytest.approx((100 + 100) * 60 / 1000)


def test_eta_is_non_blocking_and_exact(clock: ManualClock) -> None:
    bucket = DualBucket(None, 6000, clock)
    assert bucket.try_reserve(6000) is not None
    assert bucket.eta(3000) == pytest.approx(30.0)
    assert bucket.eta(10**6) == pytest.approx(60.0)  # more than the limit: wait for a full bucket


def test_headers_clamp_and_teach_the_limit(clock: ManualClock) -> None:
    bucket = DualBucket(None, None, clock)
    bucket.apply(
        RateLimitInfo(
            requests=LimitReading(limit=100, remaining=3, reset_s=20),
            tokens=LimitReading(limit=10_000, remaining=500, reset_s=1),
        )
    )
    assert bucket.headroom() == (3, 100, 500, 10_000)
    higher = RateLimitInfo(requests=LimitReading(limit=100, remaining=90))
    bucket.apply(higher)  # never raised above what we believe is left
    assert bucket.headroom()[0] == 3


def test_remaining_zero_blocks_until_reset(clock: ManualClock) -> None:
    bucket = DualBucket(1000, None, clock)
    bucket.apply(RateLimitInfo(requests=LimitReading(remaining=0, reset_s=7.5)))
    assert bucket.eta(1) == pytest.approx(7.5)
    clock.advance(7.5)
    assert bucket.eta(1) == 0.0


def test_retry_after_blocks_the_request_bucket(clock: ManualClock) -> None:
    bucket = DualBucket(None, None, clock)
    bucket.apply(RateLimitInfo(retry_after_s=2.0))
    assert bucket.eta(1) == pytest.approx(2.0)
    assert bucket.try_reserve(1) is None


def test_capacity_fraction(clock: ManualClock) -> None:
    bucket = DualBucket(10, 1000, clock)
    assert bucket.capacity_fraction() == 1.0
    bucket.try_reserve(500)
    assert bucket.capacity_fraction() == pytest.approx(0.5)


def test_token_bucket_remaining_only(clock: ManualClock) -> None:
    bucket = TokenBucket(None, clock)
    bucket.clamp(LimitReading(remaining=5))
    assert bucket.level() == 5


def test_remaining_only_limits_are_learnt_upward_and_downward(clock: ManualClock) -> None:
    """Azure reports only ``remaining``: a first low reading must not cap the bucket for good."""
    bucket = DualBucket(None, None, clock)
    bucket.apply(
        RateLimitInfo(requests=LimitReading(remaining=3), tokens=LimitReading(remaining=2_000))
    )
    assert bucket.headroom() == (3, 3, 2_000, 2_000)
    bucket.apply(
        RateLimitInfo(requests=LimitReading(remaining=599), tokens=LimitReading(remaining=99_000))
    )
    assert bucket.headroom() == (599, 599, 99_000, 99_000)
    bucket.apply(RateLimitInfo(requests=LimitReading(remaining=40)))
    assert bucket.headroom()[:2] == (40, 599)  # down again: the level follows, the limit stays
    assert bucket.eta(1) == 0.0


def test_a_configured_limit_is_not_raised_by_remaining(clock: ManualClock) -> None:
    bucket = DualBucket(10, None, clock)
    bucket.apply(RateLimitInfo(requests=LimitReading(remaining=500)))
    assert bucket.headroom()[:2] == (10, 10)


def test_bulkhead() -> None:
    bulkhead = Bulkhead(2)
    assert bulkhead.try_acquire() and bulkhead.try_acquire()
    assert not bulkhead.try_acquire()
    bulkhead.release()
    assert bulkhead.free == 1 and bulkhead.peak == 2
    bulkhead.release()
    with pytest.raises(RuntimeError):
        bulkhead.release()


def test_throttle_formula(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    tickets = [throttle.begin() for _ in range(100)]
    for i, ticket in enumerate(tickets):
        throttle.settle(ticket, accepted=i < 20)
    # (requests - K * accepts) / (requests + 1) = (100 - 40) / 101
    assert throttle.reject_probability() == pytest.approx(60 / 101)
    rejected = sum(throttle.should_reject() for _ in range(2000))
    assert 0.5 < rejected / 2000 < 0.69


def test_throttle_is_off_while_accepts_keep_up(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    for i in range(100):
        throttle.settle(throttle.begin(), accepted=i % 2 == 0)  # half accepted: K = 2 tolerates it
    assert throttle.reject_probability() == 0.0
    assert not any(throttle.should_reject() for _ in range(100))


def test_calls_in_flight_are_not_rejections_yet(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    pending = [throttle.begin() for _ in range(30)]  # a burst at start-up, no answer yet
    assert throttle.counts() == (30, 0)
    assert throttle.reject_probability() == 0.0
    for ticket in pending[:10]:
        throttle.settle(ticket, accepted=False)
    assert throttle.reject_probability() == pytest.approx(10 / 11)


def test_throttle_window_is_two_minutes(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    for _ in range(50):
        throttle.settle(throttle.begin(), accepted=False)
    assert throttle.reject_probability() > 0.9
    clock.advance(60)
    assert throttle.counts() == (50, 0)
    clock.advance(61.5)
    assert throttle.counts() == (0, 0)
    assert throttle.reject_probability() == 0.0


def test_a_call_outliving_the_window_is_forgotten(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    ticket = throttle.begin()
    clock.advance(200)
    throttle.settle(ticket, accepted=False)
    assert throttle.counts() == (0, 0) and throttle.reject_probability() == 0.0
