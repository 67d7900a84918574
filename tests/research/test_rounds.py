"""Rounds that improve, or stop: the plateau stop and each dimension's change from the round before."""

from __future__ import annotations

import pytest

from research.events import ROUND_SCORED, validated
from research.policy import changes_from, decide
from research.report import signed
from tests.research.test_matrix_policy import PROPOSED, measures, record, scores

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    "weak,remediation",
    [
        ({"verification": 0.6}, "verification"),
        ({"recency": 0.3}, "recency"),
        ({"coverage": 0.6}, "full"),
    ],
)
def test_a_remediation_that_cannot_change_its_evidence_stops_on_plateau(
    weak: dict[str, float], remediation: str
) -> None:
    failing = measures(scores(**weak))
    can = decide(failing, 1, [], max_rounds=4, patience=1, weights=PROPOSED, movable=[remediation])
    assert can.decision == "continue" and can.remediation == remediation
    others = [r for r in ("full", "verification", "recency") if r != remediation]
    cannot = decide(failing, 1, [], max_rounds=4, patience=1, weights=PROPOSED, movable=others)
    assert cannot.decision == "stop" and cannot.stop_reason == "plateau"
    assert cannot.remediation is None


def test_the_gate_bound_and_patience_come_before_plateau() -> None:
    passed = decide(
        measures(scores()), 1, [], max_rounds=4, patience=1, weights=PROPOSED, movable=[]
    )
    assert passed.stop_reason == "gate_passed"
    last = decide(
        measures(scores(coverage=0.6)),
        4,
        [],
        max_rounds=4,
        patience=1,
        weights=PROPOSED,
        movable=[],
    )
    assert last.stop_reason == "max_rounds"


def test_changes_are_recorded_with_the_precision_a_patience_stop_needs() -> None:
    before = record(1, scores(verification=0.43))
    after_scores = scores(verification=0.4299)
    ci = before.ci - 0.00002
    changes, ci_change = changes_from(after_scores, ci, before)
    assert changes is not None and changes["verification"] == pytest.approx(-0.0001)
    assert changes["coverage"] == 0.0 and ci_change == pytest.approx(-0.00002)
    assert changes_from(after_scores, ci, None) == (None, None)
    assert signed(ci_change) == " (-0.00002)" and signed(0.0) == " (±0)" and signed(None) == ""
    payload = validated(
        ROUND_SCORED,
        round=2,
        dimensions=after_scores.matrix(),
        changes=changes,
        ci=ci,
        ci_change=ci_change,
        recent_sources=1,
        recent_floor=0,
        critical_contradictions=0,
        gate_passed=False,
        decision="stop",
        stop_reason="patience",
        remediation=None,
        movable=["full"],
    )
    assert payload["ci_change"] == pytest.approx(-0.00002)
    assert payload["changes"]["verification"] == pytest.approx(-0.0001)
