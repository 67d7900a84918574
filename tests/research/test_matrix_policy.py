"""The ADR-007 matrix, the stop policy, coalesce and delivery tiers, as tables."""

from __future__ import annotations

import pytest

from research.ci import WEIGHT_SETS, confidence_index
from research.coalesce import DISCLAIMERS, coalesce
from research.evidence import Claim, EvidenceMap, Passage, Source, SubQuestion
from research.matrix import DimensionScores, tier_of
from research.policy import RoundRecord, decide, trailing_regressions
from research.report import citations_for, ordered_claims, quality_metadata, render_report
from research.scoring import RoundMeasures
from research.sources import SourcePolicy, infer_window, resolve_window

PROPOSED = WEIGHT_SETS["proposed"]


def scores(
    coverage=0.9, source_quality=0.9, agreement=0.9, verification=0.9, recency=0.9
) -> DimensionScores:
    return DimensionScores(
        coverage=coverage,
        source_quality=source_quality,
        agreement=agreement,
        verification=verification,
        recency=recency,
    )


def measures(
    s: DimensionScores, recent: int = 12, floor: int = 10, critical: int = 0, required: bool = True
) -> RoundMeasures:
    return RoundMeasures(
        scores=s,
        recent_sources=recent,
        recent_floor=floor if required else 0,
        recency_required=required,
        critical_contradictions=critical,
        claims=10,
        sources=10,
    )


def record(round_number: int, s: DimensionScores, **fields) -> RoundRecord:
    return RoundRecord(
        round=round_number,
        scores=s,
        ci=confidence_index(s, PROPOSED),
        recent_sources=12,
        recent_floor=10,
        **fields,
    )


@pytest.mark.parametrize(
    "score,tier",
    [
        (1.0, "Elite"),
        (0.90, "Elite"),
        (0.8999, "High"),
        (0.75, "High"),
        (3 / 4, "High"),
        (0.7499, "Medium"),
        (0.50, "Medium"),
        (0.4999, "Low"),
        (0.0, "Low"),
    ],
)
def test_tier_boundaries(score: float, tier: str) -> None:
    assert tier_of(score) == tier


def test_masked_failure_passes_the_weighted_mean_and_fails_the_matrix() -> None:
    masked = scores(
        coverage=0.95, source_quality=0.95, agreement=0.90, verification=0.20, recency=0.95
    )
    assert confidence_index(masked, PROPOSED) >= 0.75  # the old weighted gate is fooled
    assert masked.below("High") == ["verification"]
    verdict = decide(measures(masked), 1, [], max_rounds=4, patience=1, weights=PROPOSED)
    assert (
        verdict.decision == "continue"
        and not verdict.gate_passed
        and verdict.remediation == "verification"
    )


def test_weight_sets() -> None:
    for weights in WEIGHT_SETS.values():
        assert sum(weights) == pytest.approx(1.0, abs=1e-5)
    assert WEIGHT_SETS["roc"][0] > WEIGHT_SETS["roc"][1] > WEIGHT_SETS["roc"][4]


def test_pass_in_round_one() -> None:
    verdict = decide(measures(scores()), 1, [], max_rounds=4, patience=1, weights=PROPOSED)
    assert (verdict.decision, verdict.stop_reason, verdict.gate_passed) == (
        "stop",
        "gate_passed",
        True,
    )


@pytest.mark.parametrize(
    "kwargs,remediation",
    [
        ({"s": scores(coverage=0.6)}, "full"),
        ({"s": scores(verification=0.6)}, "verification"),
        ({"s": scores(recency=0.3)}, "recency"),
        ({"s": scores(), "recent": 3}, "recency"),
        ({"s": scores(verification=0.6, recency=0.3)}, "full"),
        ({"s": scores(verification=0.6), "recent": 3}, "full"),
    ],
)
def test_continue_with_targeted_remediation(kwargs, remediation) -> None:
    verdict = decide(measures(**kwargs), 1, [], max_rounds=4, patience=1, weights=PROPOSED)
    assert verdict.decision == "continue" and verdict.remediation == remediation


def test_recent_floor_does_not_apply_when_recency_is_not_required() -> None:
    verdict = decide(
        measures(scores(recency=1.0), recent=0, required=False),
        1,
        [],
        max_rounds=4,
        patience=1,
        weights=PROPOSED,
    )
    assert verdict.stop_reason == "gate_passed"


def test_patience_stop_on_the_first_regression() -> None:
    previous = [record(1, scores(coverage=0.7))]
    worse = scores(coverage=0.6)
    verdict = decide(measures(worse), 2, previous, max_rounds=4, patience=1, weights=PROPOSED)
    assert verdict.stop_reason == "patience"
    assert (
        decide(measures(worse), 2, previous, max_rounds=4, patience=2, weights=PROPOSED).decision
        == "continue"
    )
    assert trailing_regressions([0.7, 0.6, 0.5]) == 2 and trailing_regressions([0.5, 0.6]) == 0


@pytest.mark.parametrize("round_number", [1, 3])
def test_contradiction_veto_in_any_round(round_number: int) -> None:
    previous = [record(n, scores(coverage=0.6)) for n in range(1, round_number)]
    verdict = decide(
        measures(scores(), critical=1),
        round_number,
        previous,
        max_rounds=4,
        patience=1,
        weights=PROPOSED,
    )
    assert verdict.stop_reason == "contradiction_veto" and not verdict.gate_passed


def test_r4_is_the_hard_bound_and_max_rounds_is_respected() -> None:
    previous = [record(n, scores(coverage=0.6)) for n in (1, 2, 3)]
    assert (
        decide(
            measures(scores(coverage=0.6)), 4, previous, max_rounds=9, patience=1, weights=PROPOSED
        ).stop_reason
        == "max_rounds"
    )
    assert (
        decide(
            measures(scores(coverage=0.6)),
            2,
            previous[:1],
            max_rounds=2,
            patience=1,
            weights=PROPOSED,
        ).stop_reason
        == "max_rounds"
    )


def test_coalesce_prefers_an_earlier_round_when_a_later_one_regresses() -> None:
    records = [
        record(1, scores(coverage=0.6)),
        record(2, scores(coverage=0.7)),
        record(3, scores(coverage=0.65)),
    ]
    result = coalesce(records, PROPOSED)
    assert result.selected_round == 2 and result.confidence_level == "moderate"


def test_coalesce_ties_go_to_the_earlier_round_and_vetoed_rounds_are_excluded() -> None:
    same = scores(coverage=0.6)
    assert coalesce([record(1, same), record(2, same)], PROPOSED).selected_round == 1
    vetoed = [record(1, scores(coverage=0.6)), record(2, scores(), critical_contradictions=1)]
    result = coalesce(vetoed, PROPOSED)
    assert result.selected_round == 1 and result.vetoed_rounds == [2]


def test_coalesce_prefers_a_round_that_passed_the_gate() -> None:
    passed = record(2, scores(coverage=0.8, verification=0.8), gate_passed=True)
    higher = record(1, scores(coverage=1.0, verification=0.7, recency=1.0))
    assert higher.ci > passed.ci
    assert coalesce([higher, passed], PROPOSED).selected_round == 2


@pytest.mark.parametrize("coverage,level", [(0.9, "moderate"), (0.5, "low"), (0.1, "insufficient")])
def test_delivery_tiers_follow_the_selected_round(coverage: float, level: str) -> None:
    s = scores(
        coverage=coverage, source_quality=coverage, agreement=coverage, verification=coverage
    )
    result = coalesce([record(1, s)], PROPOSED)
    assert result.confidence_level == level
    assert coalesce([record(1, scores(), gate_passed=True)], PROPOSED).confidence_level == "full"


def _evidence() -> EvidenceMap:
    source = Source(id="c/a", uri="file:///a", title="A", status="Final", authority=1.0)
    passage = Passage(id="c/a#0", source_id="c/a", text="The answer is forty two. It is so.")
    claim = Claim(
        id="k1",
        text="The answer is forty two.",
        quote="The answer is forty two.",
        sub_question="q1",
        passage_ids=["c/a#0"],
        source_ids=["c/a"],
        verified=False,
    )
    return EvidenceMap(
        query="what?",
        sub_questions=[SubQuestion(id="q1", text="What is it?")],
        sources={"c/a": source},
        passages={"c/a#0": passage},
        claims=[claim],
    )


@pytest.mark.parametrize("level", ["full", "moderate", "low", "insufficient"])
def test_reports_carry_the_disclaimer_of_their_tier(level: str) -> None:
    s = {
        "full": scores(),
        "moderate": scores(verification=0.6),
        "low": scores(0.5, 0.5, 0.5, 0.5, 0.5),
        "insufficient": scores(0.1, 0.1, 0.1, 0.1, 0.1),
    }[level]
    rec = record(1, s, gate_passed=level == "full")
    result = coalesce([rec], PROPOSED)
    assert result.confidence_level == level
    evidence = _evidence()
    sections = ordered_claims(evidence, None)
    quality = quality_metadata(result, [rec], SourcePolicy(as_of="2025-01-01"), "gate_passed", True)
    report = render_report(
        evidence, None, citations_for(evidence, sections), sections, quality, True
    )
    if DISCLAIMERS[level]:
        assert DISCLAIMERS[level] in report
    else:
        assert "> **" not in report
    assert "The answer is forty two. — “A”, relevance 1.00 [1] [unverified]" in report


def test_recency_window_by_domain_and_inferred_from_the_publication_rate() -> None:
    from datetime import date, timedelta

    as_of = date(2025, 6, 30)
    assert resolve_window("technology", [], as_of, 10)[:2] == (90, "domain")
    assert resolve_window("reference", [], as_of, 10)[:2] == (None, "reference")
    busy = [as_of - timedelta(days=d) for d in range(0, 40, 3)]
    assert infer_window(busy, as_of, 10)[0] == 30
    sparse = [as_of - timedelta(days=400 * d) for d in range(1, 12)]
    assert infer_window(sparse, as_of, 10)[0] is None
    assert infer_window(busy[:3], as_of, 10)[0] is None
