"""A provider snapshot equal to the one its subscribers saw last is not published again: the
run's log had ``provider gemini: CLOSED`` dozens of times without a change (issue 25, item 4).
Every real change — a breaker transition or a counter — is still published."""

from __future__ import annotations

from router.models import BreakerState, ProviderSnapshot
from router.publisher import SnapshotPublisher


def test_an_unchanged_snapshot_is_published_once_and_every_change_is_published() -> None:
    current = {"gemini": ProviderSnapshot(name="gemini", kind="openai", state=BreakerState.CLOSED)}
    publisher = SnapshotPublisher(lambda name: current[name])
    seen: list[ProviderSnapshot] = []
    publisher.subscribe(seen.append)
    publisher.changed("gemini", None, urgent=True)
    publisher.changed("gemini", None, urgent=True)  # in flight went 0 -> 1 -> 0 meanwhile
    assert [s.state for s in seen] == [BreakerState.CLOSED]
    current["gemini"] = current["gemini"].model_copy(update={"requests_total": 1})
    publisher.changed("gemini", None, urgent=True)
    current["gemini"] = current["gemini"].model_copy(update={"state": BreakerState.OPEN})
    publisher.changed("gemini", None, urgent=True)
    assert [(s.state, s.requests_total) for s in seen] == [
        (BreakerState.CLOSED, 0),
        (BreakerState.CLOSED, 1),
        (BreakerState.OPEN, 1),
    ]
    later: list[ProviderSnapshot] = []
    publisher.subscribe(later.append)
    publisher.changed("gemini", None, urgent=True)
    assert [s.state for s in later] == [BreakerState.OPEN], "a new subscriber hears the state"
