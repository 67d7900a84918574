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


def test_a_new_bucket_is_not_blocked_whatever_the_clock_reads() -> None:
    """No Retry-After or ``remaining: 0`` seen yet: nothing to wait for, even at monotonic 0."""
    at_zero = ManualClock(start=0.0)
    for bucket in (DualBucket(None, None, at_zero), DualBucket(60, 1000, at_zero)):
        assert bucket.eta(1) == 0.0
        assert bucket.try_reserve(1) is not None


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


def test_a_cancelled_call_is_forgotten_by_the_throttle(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    for _ in range(10):
        throttle.settle(throttle.begin(), accepted=False)
    cancelled = throttle.begin()
    clock.advance(1.5)  # a later slot: the ticket finds its own
    later = throttle.begin()
    assert throttle.counts() == (12, 0)
    throttle.cancel(cancelled)
    assert throttle.counts() == (11, 0)
    assert throttle.reject_probability() == pytest.approx(10 / 11)  # only settled calls count
    throttle.settle(later, accepted=True)
    assert throttle.counts() == (11, 1)
    assert throttle.reject_probability() == pytest.approx((11 - 2) / 12)
    clock.advance(200)
    throttle.cancel(cancelled)  # outlived the window: nothing left to withdraw
    assert throttle.counts() == (0, 0)


def test_throttle_forgets_accepts_and_pending_calls_with_their_slot(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    for _ in range(5):
        throttle.settle(throttle.begin(), accepted=True)
    for _ in range(3):
        throttle.begin()  # never answered
    clock.advance(121.0)  # the slot ends exactly at the window's horizon: gone
    assert throttle.counts() == (0, 0)
    for _ in range(10):
        throttle.settle(throttle.begin(), accepted=False)
    assert throttle.reject_probability() == pytest.approx(10 / 11)


def test_throttle_slot_boundaries(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    clock.advance(0.5)
    ticket = throttle.begin()
    assert ticket.slot_start == pytest.approx(1000.0)  # the slot the call started in
    clock.advance(119.0)  # 1119.5: the slot [1000, 1001) is still inside the window
    assert throttle.counts() == (1, 0)


def test_throttle_decisions_follow_the_injected_rng(clock: ManualClock) -> None:
    def decisions(seed: int) -> list[bool]:
        throttle = AdaptiveThrottle(ManualClock(), rng=random.Random(seed))
        for _ in range(10):
            throttle.settle(throttle.begin(), accepted=False)
        return [throttle.should_reject() for _ in range(64)]

    assert decisions(4) == decisions(4)
    assert decisions(4) != decisions(5)


def test_clamp_edge_readings(clock: ManualClock) -> None:
    configured = TokenBucket(10, clock)
    configured.clamp(LimitReading(limit=0, remaining=5))  # a zero limit means unknown
    assert configured.limit == 10 and configured.level() == 5
    one = TokenBucket(None, clock)
    one.clamp(LimitReading(limit=1))
    assert one.limit == 1
    floor = TokenBucket(None, clock)
    floor.clamp(LimitReading(remaining=1))
    assert floor.limit == 1
    spent = TokenBucket(100, clock)
    spent.take(97)
    spent.clamp(LimitReading(limit=200))  # a new limit does not refill what was spent
    assert spent.limit == 200 and spent.level() == pytest.approx(3)
    lowered = DualBucket(100, None, clock)
    lowered.apply(RateLimitInfo(requests=LimitReading(limit=40)))  # a lower limit, no remaining
    assert lowered.headroom()[:2] == (40, 40)  # never more left than the limit
    assert lowered.capacity_fraction() == 1.0
    reported = TokenBucket(None, clock)
    reported.clamp(LimitReading(limit=100, remaining=50))
    reported.clamp(LimitReading(remaining=150))  # above a limit the provider stated: not learnt
    assert reported.limit == 100 and reported.level() == 50
    resets = TokenBucket(100, clock)
    resets.clamp(LimitReading(remaining=5, reset_s=10))  # a reset alone blocks nothing
    assert resets.eta(1) == 0.0


def test_reconcile_refunds_a_single_token(clock: ManualClock) -> None:
    bucket = DualBucket(None, 1000, clock)
    reservation = bucket.try_reserve(10)
    assert reservation is not None
    bucket.reconcile(reservation, 9)
    assert bucket.headroom()[2] == 991


def test_capacity_fraction_of_empty_and_unknown_buckets(clock: ManualClock) -> None:
    assert DualBucket(None, None, clock).capacity_fraction() == 1.0
    empty = DualBucket(10, None, clock)
    for _ in range(10):
        assert empty.try_reserve(1) is not None
    assert empty.capacity_fraction() == 0.0


def test_cancel_keeps_the_slot_bookkeeping_straight(clock: ManualClock) -> None:
    throttle = AdaptiveThrottle(clock, rng=random.Random(1))
    tickets = [throttle.begin() for _ in range(3)]
    throttle.cancel(tickets[0])
    assert throttle.reject_probability() == 0.0  # the two left are pending, not refused
    throttle.settle(tickets[1], accepted=False)
    assert throttle.reject_probability() == pytest.approx(1 / 2)
    throttle.settle(tickets[2], accepted=False)
    clock.advance(122.0)  # the slot expires with nothing pending
    for _ in range(10):
        throttle.settle(throttle.begin(), accepted=False)
    assert throttle.reject_probability() == pytest.approx(10 / 11)


def test_a_token_bucket_refusing_for_half_a_second_refuses(clock: ManualClock) -> None:
    bucket = DualBucket(None, 120, clock)  # two tokens a second
    assert bucket.try_reserve(120) is not None
    assert bucket.eta(1) == pytest.approx(0.5)
    assert bucket.try_reserve(1) is None


def test_headroom_of_an_empty_request_bucket_is_zero(clock: ManualClock) -> None:
    bucket = DualBucket(2, None, clock)
    bucket.try_reserve(1)
    bucket.try_reserve(1)
    assert bucket.headroom() == (0, 2, None, None)


def test_a_one_per_minute_bucket_refills_and_a_zero_limit_stays_unknown(
    clock: ManualClock,
) -> None:
    single = TokenBucket(1, clock)
    single.take(1)
    assert single.eta(1) == pytest.approx(60.0)
    clock.advance(60)
    assert single.eta(1) == 0.0 and single.level() == pytest.approx(1.0)
    zero = TokenBucket(None, clock)
    clock.advance(1)
    zero.clamp(LimitReading(limit=0, remaining=5))  # a zero limit is no limit: still unknown
    assert zero.limit is None and zero.eta(10**6) == 0.0 and zero.level() is None


def test_capacity_fraction_of_the_smallest_and_of_a_zero_limit(clock: ManualClock) -> None:
    single = DualBucket(1, None, clock)
    assert single.capacity_fraction() == 1.0
    assert single.try_reserve(0) is not None
    assert single.capacity_fraction() == 0.0  # its one request a minute is spent
    zero = DualBucket(0, 0, clock)
    assert zero.capacity_fraction() == 1.0  # zero: unknown, never limits
    assert zero.headroom() == (None, None, None, None)
    tokens_only = DualBucket(None, 100, clock)
    assert tokens_only.try_reserve(100) is not None
    assert tokens_only.capacity_fraction() == 0.0


def test_a_stated_limit_equal_to_the_learnt_one_clamps_like_any_stated_limit(
    clock: ManualClock,
) -> None:
    bucket = TokenBucket(None, clock)
    bucket.clamp(LimitReading(remaining=100))  # learnt from remaining alone (Azure)
    bucket.take(50)  # reserved by calls still in flight
    bucket.clamp(LimitReading(limit=100, remaining=80))  # now stated, and what it counted
    assert bucket.limit == 100 and bucket.level() == 50  # no more than either count
