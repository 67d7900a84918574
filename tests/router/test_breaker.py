"""Breaker state machine on an injected clock: every transition, cooldown growth and cap, leases, OPEN failures.

A trip's ADR-002 cooldown is the ceiling (``view().ceiling_s``); ``cooldown_remaining()`` counts
down to the next probe, which comes much sooner (jittered, growing with the outage).
"""

from __future__ import annotations

import random

import pytest

from router.breaker import BreakerPolicy, CircuitBreaker, Transition
from router.clock import ManualClock
from router.errors import ErrorClass
from router.models import BreakerState

CLOSED, OPEN, HALF_OPEN = BreakerState.CLOSED, BreakerState.OPEN, BreakerState.HALF_OPEN


def make(clock: ManualClock, **policy: float) -> tuple[CircuitBreaker, list[Transition]]:
    seen: list[Transition] = []
    breaker = CircuitBreaker(BreakerPolicy(**policy), clock, seen.append, random.Random(3))  # type: ignore[arg-type]
    return breaker, seen


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
    assert breaker.view().ceiling_s == pytest.approx(30.0)
    assert breaker.cooldown_remaining() == pytest.approx(1.0)  # first probe after probe_min_s


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
        if breaker.state is OPEN:
            break
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
    assert breaker.view().ceiling_s == pytest.approx(120.0)
    assert breaker.cooldown_remaining() == pytest.approx(1.0)


def test_timeouts_use_the_timeout_base(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker, ErrorClass.TIMEOUT)
    assert breaker.view().ceiling_s == pytest.approx(60.0)


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
        cooldowns.append(breaker.view().ceiling_s)
    assert cooldowns == pytest.approx([min(600.0, c) for c in expected])
    assert cooldowns[-1] == 600.0


def test_recovery_resets_the_growth(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    clock.advance(30)
    lease = breaker.acquire_probe()
    breaker.record_failure(ErrorClass.SERVER, lease=lease)
    assert breaker.view().ceiling_s == pytest.approx(45.0)
    clock.advance(45)
    breaker.record_success(breaker.acquire_probe())
    trip(breaker)
    assert breaker.view().ceiling_s == pytest.approx(30.0)
    assert breaker.view().consecutive_trips == 1


def test_failures_while_open_do_not_extend_the_break(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    trip(breaker)
    clock.advance(0.6)
    for error in (ErrorClass.SERVER, ErrorClass.TIMEOUT, ErrorClass.RATE_LIMIT):
        breaker.record_failure(error, retry_after_s=500)
    breaker.record_success()  # a late success while OPEN does not close it either
    assert breaker.state is OPEN
    assert breaker.cooldown_remaining() == pytest.approx(0.4)
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


def test_a_lost_probes_late_success_after_recovery_is_not_counted(clock: ManualClock) -> None:
    """The lost probe's answer arrives after another probe closed the breaker: it is a stale
    result, so it neither resets the consecutive-failure count nor adds to the window."""
    breaker, _ = make(clock, probe_lease_s=5.0)
    trip(breaker)
    clock.advance(breaker.cooldown_remaining())
    lost = breaker.acquire_probe()
    assert lost is not None
    clock.advance(5.0)
    live = breaker.acquire_probe()
    breaker.record_success(live)
    assert breaker.state is CLOSED
    trip(breaker, n=4)
    breaker.record_success(lost)  # late, from before the recovery: ignored
    assert breaker.view().consecutive_failures == 4
    breaker.record_failure(ErrorClass.SERVER)
    assert breaker.state is OPEN


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
    assert other.view().ceiling_s == pytest.approx(30 * 1.5**2)
    breaker.restore(CLOSED, 0.0, 0, None, None)  # a break another run ended early
    view = breaker.view()
    assert (view.state, view.cooldown_remaining_s, view.ceiling_s) == (CLOSED, 0.0, 0.0)


def test_wall_clock_jumps_do_not_move_cooldowns(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    clock.set_wall(clock.wall() + 3600)  # NTP step forward
    assert breaker.state is OPEN and breaker.cooldown_remaining() == pytest.approx(1.0)
    clock.set_wall(clock.wall() - 7200)  # and backward
    clock.advance(0.99)
    assert breaker.state is OPEN
    clock.advance(0.01)
    assert breaker.state is HALF_OPEN


def play_outage(
    breaker: CircuitBreaker, clock: ManualClock, seconds: float, ceilings: list[float] | None = None
) -> list[float]:
    """An outage of ``seconds`` from now: each probe fails until it ends, the first one after it
    succeeds. Returns the probe times (since the start), the successful one last."""
    probes = []
    began = clock.monotonic()
    while True:
        clock.advance(breaker.cooldown_remaining())
        lease = breaker.acquire_probe()
        assert lease is not None
        probes.append(clock.monotonic() - began)
        if clock.monotonic() - began >= seconds:
            breaker.record_success(lease)
            assert breaker.state is CLOSED
            return probes
        breaker.record_failure(ErrorClass.SERVER, lease=lease)
        if ceilings is not None:
            ceilings.append(breaker.view().ceiling_s)


def test_probing_starts_soon_and_backs_off_with_the_outage(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker)
    ceilings: list[float] = []
    probes = play_outage(breaker, clock, 3600, ceilings)[:-1]
    gaps = [b - a for a, b in zip([0.0, *probes], probes)]
    assert probes[0] == pytest.approx(1.0)  # the first probe a second after the trip
    assert min(gaps) >= 1.0  # never more than one probe a second
    # each gap is within its bound: 0.2 x the outage so far, and never above the trip's ceiling
    for start, gap in zip([0.0, *probes], gaps):
        assert gap <= max(1.0, 0.2 * start) + 1e-9
        assert gap <= 600.0
    # the probes back off: 10 s into the outage they come every second or two ...
    early = [g for s, g in zip([0.0, *probes], gaps) if s < 10]
    assert max(early) <= 2.0
    # ... an hour in, minutes apart, and the trip count (the ceiling) kept growing to the cap
    assert gaps[-1] > 60
    assert ceilings[:3] == pytest.approx([45.0, 67.5, 101.25])  # x1.5 per trip ...
    assert ceilings[-1] == 600.0  # ... up to the cap
    assert breaker.state is CLOSED and breaker.view().consecutive_trips == 0  # reset by the success
    assert 20 < len(probes) < 120  # ~an hour of outage costs dozens of probes, not thousands


def test_a_ten_second_outage_is_noticed_within_two_seconds(clock: ManualClock) -> None:
    for seed in range(50):
        breaker = CircuitBreaker(BreakerPolicy(), clock, rng=random.Random(seed))
        trip(breaker)
        probes = play_outage(breaker, clock, 10.0)
        assert probes[-1] - 10.0 <= 2.0  # the first probe after the outage closes the breaker


def test_jitter_comes_from_the_injected_rng(clock: ManualClock) -> None:
    def delays(seed: int) -> list[float]:
        local = ManualClock()
        breaker = CircuitBreaker(BreakerPolicy(), local, rng=random.Random(seed))
        trip(breaker)
        out = []
        for _ in range(8):
            out.append(breaker.cooldown_remaining())
            local.advance(breaker.cooldown_remaining())
            breaker.record_failure(ErrorClass.SERVER, lease=breaker.acquire_probe())
        return out

    assert delays(1) == delays(1)
    assert delays(1) != delays(2)
    assert len(set(delays(1)[5:])) == 3  # full jitter once the bound exceeds the floor


def test_retry_after_quota_and_misconfiguration_are_not_probed_early(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    breaker.record_failure(ErrorClass.RATE_LIMIT, retry_after_s=7.0)
    assert breaker.cooldown_remaining() == pytest.approx(7.0)
    quota, _ = make(clock)
    quota.record_failure(ErrorClass.QUOTA)
    assert quota.cooldown_remaining() == pytest.approx(600.0)
    wrong, _ = make(clock)
    wrong.force_open(ErrorClass.PERMANENT, "bad key")
    assert wrong.cooldown_remaining() == pytest.approx(600.0)


def test_a_lease_outlives_its_probe(clock: ManualClock) -> None:
    breaker, _ = make(clock, probe_lease_s=15.0)
    trip(breaker)
    clock.advance(breaker.cooldown_remaining())
    lease = breaker.acquire_probe(probe_s=70.0)  # a 10 s health check + a 60 s call
    assert lease is not None
    clock.advance(70.0)  # the probe's calls time out at the latest now
    assert breaker.acquire_probe() is None  # still its lease
    breaker.record_success(lease)
    assert breaker.state is CLOSED


def test_a_trip_from_another_process_is_adopted_only_when_newer(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    assert breaker.adopt_trip(5.0, 3, "5 consecutive failures", clock.wall() + 1)
    assert breaker.state is OPEN and breaker.cooldown_remaining() == pytest.approx(5.0)
    assert breaker.view().consecutive_trips == 3
    assert "another process" in seen[-1].reason
    clock.advance(5.0)
    breaker.record_success(breaker.acquire_probe())
    assert breaker.state is CLOSED
    # an older row (written before this breaker recovered) changes nothing
    assert not breaker.adopt_trip(5.0, 3, "old", clock.wall() - 1)
    assert breaker.state is CLOSED


def test_releasing_a_stale_lease_leaves_the_live_one_alone(clock: ManualClock) -> None:
    breaker, _ = make(clock, probe_lease_s=5.0)
    trip(breaker)
    clock.advance(breaker.cooldown_remaining())
    stale = breaker.acquire_probe()
    assert stale is not None
    clock.advance(5.0)  # the first probe was lost: its lease expired
    live = breaker.acquire_probe()
    assert live is not None
    breaker.release_probe(stale)
    assert not breaker.can_attempt()  # the live probe still holds the provider
    breaker.release_probe(live)
    assert breaker.can_attempt()


def test_restore_takes_stored_values_as_they_are_and_clamps_nonsense(clock: ManualClock) -> None:
    closed, _ = make(clock)
    closed.restore(CLOSED, 0.0, 0, None, None)
    assert closed.view().consecutive_trips == 0 and closed.state is CLOSED
    assert closed.view().changed_wall is None
    ended, _ = make(clock)
    ended.restore(OPEN, 0.0, 0, "x", 5.0)  # a break that ended while nobody ran
    view = ended.view()
    assert view.state is HALF_OPEN and view.ceiling_s == 0.0 and view.changed_wall != 5.0
    broken, _ = make(clock)
    broken.restore(OPEN, -3.0, -2, "y", 7.0)
    assert broken.view().consecutive_trips == 0 and broken.state is HALF_OPEN
    short, _ = make(clock)
    short.restore(OPEN, 0.5, 1, "z", 9.0)
    view = short.view()
    assert view.state is OPEN and view.ceiling_s == pytest.approx(0.5)
    assert view.open_reason == "z" and view.changed_wall == 9.0
    assert view.cooldown_remaining_s == pytest.approx(0.5)


def test_can_attempt_in_every_state(clock: ManualClock) -> None:
    breaker, _ = make(clock, probe_lease_s=5.0)
    assert breaker.can_attempt() is True  # CLOSED
    trip(breaker)
    assert breaker.can_attempt() is False  # OPEN
    clock.advance(breaker.cooldown_remaining())
    assert breaker.can_attempt() is True  # the read itself notices the cooldown is over
    lease = breaker.acquire_probe()
    assert lease is not None and breaker.can_attempt() is False  # a live probe
    clock.advance(5.0)
    assert breaker.can_attempt() is True  # its lease expired at exactly this instant


def test_successes_count_as_successes_in_the_failure_rate(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    for _ in range(10):
        breaker.record_success()
    breaker.record_failure(ErrorClass.SERVER)
    assert breaker.state is CLOSED  # 1 failure in 11 calls
    assert breaker.view().consecutive_failures == 1


def test_a_probe_success_closes_with_a_clean_slate(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    trip(breaker)
    clock.advance(breaker.cooldown_remaining())
    breaker.record_success(breaker.acquire_probe())
    view = breaker.view()
    assert (view.state, view.consecutive_failures, view.consecutive_trips) == (CLOSED, 0, 0)
    assert view.open_reason is None and view.ceiling_s == 0.0
    assert seen[-1].reason == "probe succeeded"
    trip(breaker, n=4)  # a fresh count: four failures do not trip
    assert breaker.state is CLOSED


def test_force_open_from_half_open_keeps_the_reason_and_retry_after(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    trip(breaker)
    clock.advance(breaker.cooldown_remaining())  # HALF_OPEN, noticed by force_open's own read
    breaker.force_open(ErrorClass.RATE_LIMIT, "told to", retry_after_s=42.0)
    assert breaker.state is OPEN and breaker.cooldown_remaining() == pytest.approx(42.0)
    assert breaker.view().open_reason == "told to"
    assert [t.new for t in seen] == [OPEN, HALF_OPEN, OPEN]


def test_restore_of_a_break_resumes_the_outage_clock(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    breaker.restore(OPEN, 0.0, 1, "stored", 1.0)
    clock.advance(30.0)  # HALF_OPEN from the start; the outage began at the restore
    breaker.record_failure(ErrorClass.SERVER, lease=breaker.acquire_probe())
    # the probe bound is 0.2 x the 30 s the outage has lasted: up to 6 s, at least 1 s
    assert 1.0 < breaker.cooldown_remaining() <= 6.0
    closed, _ = make(clock)
    closed.restore(CLOSED, 0.0, 0, None, 1.0)
    assert closed.view().open_reason is None
    trip(closed)
    assert closed.cooldown_remaining() == pytest.approx(1.0)  # a fresh outage


def test_an_adopted_trip_is_a_full_break(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    trip(breaker)
    clock.advance(breaker.cooldown_remaining())
    breaker.record_success(breaker.acquire_probe())  # recovered at wall time `closed_at`
    closed_at = breaker.view().changed_wall
    assert closed_at is not None
    breaker.record_failure(ErrorClass.SERVER)  # one failure here before the other's trip
    assert not breaker.adopt_trip(0.0, 2, "ended", closed_at + 1)  # nothing left of it
    assert not breaker.adopt_trip(0.5, 2, "same instant", closed_at)  # not newer than ours
    assert breaker.adopt_trip(0.5, 2, "5 consecutive failures", closed_at + 2)
    view = breaker.view()
    assert view.state is OPEN and view.ceiling_s == pytest.approx(0.5)
    assert view.consecutive_failures == 0 and view.changed_wall == closed_at + 2
    assert view.open_reason == "5 consecutive failures" and view.consecutive_trips == 2
    clock.advance(30.0)
    breaker.record_failure(ErrorClass.SERVER, lease=breaker.acquire_probe())
    # the outage began at the adoption, 30 s ago: the next probe within 0.2 x 30 s
    assert 1.0 < breaker.cooldown_remaining() <= 6.0
    assert not breaker.adopt_trip(5.0, 9, "while OPEN", closed_at + 99)
    assert len([t for t in seen if t.new is OPEN]) == 3


def test_a_fresh_breaker_reads_empty(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    view = breaker.view()
    assert view.open_reason is None and view.cooldown_remaining_s == 0.0
    assert view.ceiling_s == 0.0 and not view.probe_in_flight
    assert breaker.cooldown_remaining() == 0.0


def test_transitions_carry_their_times_and_reasons(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    trip(breaker)
    assert (seen[0].at_monotonic, seen[0].at_wall) == (clock.monotonic(), clock.wall())
    assert breaker.view().consecutive_failures == 0  # the trip starts the count afresh
    clock.advance(breaker.cooldown_remaining())
    assert breaker.state is HALF_OPEN and seen[-1].reason == "cooldown over"
    lease = breaker.acquire_probe()
    assert breaker.view().probe_in_flight
    breaker.record_failure(ErrorClass.SERVER, lease=lease)
    assert seen[-1].reason.startswith("probe failed: server; next probe in")


def test_the_first_read_after_a_cooldown_may_be_any_call(clock: ManualClock) -> None:
    for first_read in ("record_failure", "adopt_trip"):
        breaker, seen = make(clock)
        trip(breaker)
        clock.advance(breaker.cooldown_remaining())
        if first_read == "record_failure":
            breaker.record_failure(ErrorClass.SERVER)  # a late result: ignored, not a crash
        else:
            assert not breaker.adopt_trip(5.0, 1, "x", clock.wall() + 1)
        assert breaker.state is HALF_OPEN and seen[-1].new is HALF_OPEN


def test_a_failed_probe_keeps_its_class_and_retry_after(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    trip(breaker, ErrorClass.TIMEOUT)
    clock.advance(breaker.cooldown_remaining())
    breaker.record_failure(ErrorClass.TIMEOUT, lease=breaker.acquire_probe())
    assert breaker.view().ceiling_s == pytest.approx(60.0 * 1.5)
    clock.advance(breaker.cooldown_remaining())
    breaker.record_failure(ErrorClass.RATE_LIMIT, 7.0, lease=breaker.acquire_probe())
    assert breaker.cooldown_remaining() == pytest.approx(7.0)


def test_overload_trips_at_once_only_with_a_retry_after(clock: ManualClock) -> None:
    with_retry, _ = make(clock)
    with_retry.record_failure(ErrorClass.OVERLOAD, retry_after_s=3.0)
    assert with_retry.state is OPEN and with_retry.cooldown_remaining() == pytest.approx(3.0)
    without, _ = make(clock)
    without.record_failure(ErrorClass.OVERLOAD)
    assert without.state is CLOSED
    server, _ = make(clock)
    server.record_failure(ErrorClass.SERVER, retry_after_s=3.0)  # a 500 with Retry-After
    assert server.state is CLOSED


def test_a_call_exactly_window_s_ago_still_counts(clock: ManualClock) -> None:
    breaker, _ = make(clock)
    breaker.record_failure(ErrorClass.SERVER)
    clock.advance(60.0)
    for _ in range(5):
        breaker.record_success()
    for _ in range(4):
        breaker.record_failure(ErrorClass.SERVER)
    assert breaker.state is OPEN  # 5 failures in the 10 calls of the last 60 s


def test_the_failure_rate_looks_at_the_last_20_calls_only(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    for _ in range(30):
        breaker.record_success()
    for _ in range(4):  # never five in a row
        for _ in range(4):
            breaker.record_failure(ErrorClass.SERVER)
        if breaker.state is OPEN:
            break
        breaker.record_success()
    assert breaker.state is OPEN and "failure rate" in seen[-1].reason


def test_a_quota_cooldown_of_zero_is_zero(clock: ManualClock) -> None:
    breaker, _ = make(clock, cooldown_quota_s=0.0)
    breaker.record_failure(ErrorClass.QUOTA)
    assert breaker.cooldown_remaining() == 0.0 and breaker.state is HALF_OPEN


def test_probe_in_flight_ends_exactly_when_the_lease_does(clock: ManualClock) -> None:
    breaker, _ = make(clock, probe_lease_s=5.0)
    trip(breaker)
    clock.advance(breaker.cooldown_remaining())
    breaker.acquire_probe()
    clock.advance(4.9)
    assert breaker.view().probe_in_flight
    clock.advance(0.1)
    assert not breaker.view().probe_in_flight


def test_a_half_open_breaker_adopts_another_process_probe_outcome(clock: ManualClock) -> None:
    breaker, seen = make(clock)
    assert not breaker.adopt_probe_outcome(OPEN, 9.0, 4, "x", clock.wall())  # CLOSED: not probing
    trip(breaker)
    assert not breaker.adopt_probe_outcome(CLOSED, 0.0, 0, None, clock.wall() + 1)  # OPEN still
    clock.advance(breaker.cooldown_remaining())
    assert breaker.state is HALF_OPEN
    went_half_open = clock.wall()
    lease = breaker.acquire_probe()
    assert lease is not None
    assert not breaker.adopt_probe_outcome(
        CLOSED, 0.0, 0, None, went_half_open
    )  # its own probe is out
    breaker.release_probe(lease)
    assert not breaker.adopt_probe_outcome(CLOSED, 0.0, 0, None, went_half_open - 0.5)  # older
    assert not breaker.adopt_probe_outcome(HALF_OPEN, 0.0, 0, None, went_half_open)  # no outcome
    assert breaker.adopt_probe_outcome(OPEN, 12.0, 3, "probe failed: server", went_half_open)
    view = breaker.view()
    assert (view.state, view.cooldown_remaining_s, view.consecutive_trips) == (OPEN, 12.0, 3)
    assert (view.open_reason, view.changed_wall) == ("probe failed: server", went_half_open)
    assert (
        seen[-1].reason
        == "probe failed in another process: probe failed: server; next probe in 12.0s"
    )
    assert view.ceiling_s >= 12.0
    clock.advance(12.0)
    assert breaker.state is HALF_OPEN
    assert breaker.adopt_probe_outcome(CLOSED, 0.0, 0, None, clock.wall())
    view = breaker.view()
    assert (view.state, view.consecutive_trips, view.open_reason) == (CLOSED, 0, None)
    assert seen[-1].reason == "probe succeeded in another process"
    trip(breaker, n=4)
    assert breaker.state is CLOSED  # the failure count started again from nothing
