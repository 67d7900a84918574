"""ADR-004 routing as a pure function: precedence, skips, branches, loops, detours, tie-breaks."""

from __future__ import annotations

from typing import Any

import pytest

from engine.conditions import StepView, build_activation
from engine.context import InterruptAnswer
from engine.graph import WorkflowGraph
from engine.protocol import TieBreakAnswer
from engine.routing import (
    HumanTieBreakNeeded,
    RouteInput,
    TieBreakNeeded,
    branch_key,
    decide,
    settle_human_tie_break,
    settle_tie_break,
)
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import RoutingSignal, RunStatus


def workflow(*steps: dict) -> WorkflowDefinition:
    return WorkflowDefinition(name="r", steps=[StepSpec(uses="demo.any", **s) for s in steps])


def route(
    wf: WorkflowDefinition,
    step_id: str,
    outputs: dict[str, Any] | None = None,
    *,
    iteration: int = 0,
    steps: dict[str, StepView] | None = None,
    **options: Any,
):
    outputs = outputs or {}
    activation = build_activation(
        inputs={"strict": True}, steps=steps or {}, outputs=outputs, iteration=iteration
    )
    return decide(
        RouteInput(step=wf.step(step_id), outputs=outputs, activation=activation, **options),
        WorkflowGraph(wf),
    )


def signal_of(result: RoutingSignal | TieBreakNeeded) -> RoutingSignal:
    assert isinstance(result, RoutingSignal), result
    return result


CRITIC_ROUTING = {
    "kind": "conditional",
    "next": "publish",
    "terminate_when": "outputs.status == 'ABORT'",
    "conditions": [
        {"expr": "outputs.score >= 0.8", "target": "publish"},
        {"expr": "outputs.status == 'WEAK'", "target": "author"},
        {"expr": "outputs.status == 'NEEDS_SOURCES'", "target": "gather"},
        {"expr": "outputs.status == 'ESCALATE'", "target": "escalate"},
    ],
    "loop": {"target": "author", "max_iterations": 2},
    "detour": {"target": "gather"},
    "tie_breaker": {
        "valid_targets": ["publish", "author", "escalate"],
        "confidence_threshold": 0.7,
    },
}


@pytest.fixture
def review() -> WorkflowDefinition:
    """intake → author → critic; critic routes to publish | escalate, loops to author, detours to gather."""
    return workflow(
        {"id": "intake"},
        {"id": "author", "depends_on": ["intake"]},
        {"id": "critic", "depends_on": ["author"], "routing": CRITIC_ROUTING},
        {
            "id": "gather",
            "routing": {
                "kind": "conditional",
                "next": "audit",
                "conditions": [{"expr": "true", "target": "deeper"}],
                "detour": {"target": "deeper"},
            },
        },
        {"id": "deeper"},
        {"id": "audit"},
        {"id": "escalate"},
        {"id": "publish", "depends_on": ["critic"]},
    )


# -- 1. stop conditions ---------------------------------------------------------------


def test_safety_bound_ends_the_run_partial_before_anything_else(review):
    signal = signal_of(route(review, "critic", {"score": 0.9, "status": "ABORT"}, step_runs=80))
    assert (signal.decision, signal.route, signal.run_status) == (
        "terminate",
        "terminate",
        RunStatus.PARTIAL,
    )
    assert signal.next_step_id is None
    assert "safety bound reached: 80 step executions (bound 80" in signal.reason
    assert signal.evaluated_conditions == []
    assert signal.skipped_targets == ["publish", "gather", "escalate"]


def test_the_safety_bound_defaults_to_ten_times_the_steps_and_can_be_given(review):
    assert signal_of(route(review, "critic", {"score": 0.9}, step_runs=79)).route == "condition"
    assert (
        signal_of(route(review, "critic", {"score": 0.9}, step_runs=5, max_step_runs=5)).run_status
        == RunStatus.PARTIAL
    )


def test_terminate_when_beats_conditions_and_completes_the_run(review):
    signal = signal_of(route(review, "critic", {"score": 0.9, "status": "ABORT"}))
    assert (signal.decision, signal.run_status) == ("terminate", RunStatus.COMPLETED)
    assert signal.reason == "terminate_when matched: outputs.status == 'ABORT'"
    assert [(c.expr, c.matched) for c in signal.evaluated_conditions] == [
        ("outputs.status == 'ABORT'", True)
    ]
    assert signal.skipped_targets == ["publish", "gather", "escalate"]


def test_an_output_terminate_true_completes_the_run(review):
    signal = signal_of(route(review, "critic", {"score": 0.9, "status": "OK", "terminate": True}))
    assert (signal.decision, signal.run_status) == ("terminate", RunStatus.COMPLETED)
    assert "terminate: true" in signal.reason
    assert (
        signal_of(
            route(review, "critic", {"score": 0.9, "status": "OK", "terminate": "yes"})
        ).decision
        == "advance"
    )


def test_a_failing_terminate_when_falls_through(review):
    signal = signal_of(route(review, "critic", {"score": 0.9}))
    first = signal.evaluated_conditions[0]
    assert (first.matched, first.error) == (False, "no such member in mapping: 'status'")
    assert (signal.route, signal.next_step_id) == ("condition", "publish")


# -- 2. CEL conditions in order ------------------------------------------------------------


def test_first_matching_condition_wins_and_unchosen_targets_are_skipped(review):
    signal = signal_of(route(review, "critic", {"score": 0.95, "status": "ESCALATE"}))
    assert (signal.decision, signal.next_step_id, signal.route) == (
        "advance",
        "publish",
        "condition",
    )
    assert signal.reason == "condition 1 matched: outputs.score >= 0.8 → publish"
    assert [(c.expr, c.target, c.matched) for c in signal.evaluated_conditions] == [
        ("outputs.status == 'ABORT'", None, False),
        ("outputs.score >= 0.8", "publish", True),
    ]
    assert signal.skipped_targets == ["gather", "escalate"]
    assert signal.confidence == 1.0 and not signal.needs_human and not signal.tie_breaker_used


def test_an_evaluation_error_counts_as_not_matched_and_is_recorded(review):
    signal = signal_of(route(review, "critic", {"status": "ESCALATE"}))
    assert (signal.next_step_id, signal.route) == ("escalate", "condition")
    errors = [c.error for c in signal.evaluated_conditions]
    assert errors[1] == "no such member in mapping: 'score'"
    assert signal.skipped_targets == ["publish", "gather"]


# -- 3. static routing and the default edge ---------------------------------------------------


def test_linear_routing_takes_next():
    wf = workflow({"id": "a", "routing": {"next": "b"}}, {"id": "b"})
    signal = signal_of(route(wf, "a"))
    assert (signal.decision, signal.next_step_id, signal.route, signal.skipped_targets) == (
        "advance",
        "b",
        "next",
        [],
    )


def test_no_match_without_a_tie_breaker_takes_the_default_edge():
    wf = workflow(
        {
            "id": "a",
            "routing": {
                "kind": "conditional",
                "next": "b",
                "conditions": [{"expr": "outputs.ok", "target": "c"}],
            },
        },
        {"id": "b"},
        {"id": "c"},
    )
    signal = signal_of(route(wf, "a", {"ok": False}))
    assert (signal.next_step_id, signal.route, signal.skipped_targets) == ("b", "default", ["c"])
    assert signal.reason == "no condition matched; default edge → b"


def test_no_match_and_no_default_edge_ends_the_path_skipping_every_target():
    wf = workflow(
        {
            "id": "a",
            "routing": {
                "kind": "conditional",
                "conditions": [{"expr": "outputs.ok", "target": "c"}],
            },
        },
        {"id": "c"},
    )
    signal = signal_of(route(wf, "a", {"ok": False}))
    assert (signal.decision, signal.next_step_id, signal.route, signal.skipped_targets) == (
        "end",
        None,
        "end",
        ["c"],
    )


# -- 4. branch --------------------------------------------------------------------------------


@pytest.fixture
def branching() -> WorkflowDefinition:
    return workflow(
        {
            "id": "check",
            "routing": {
                "kind": "branch",
                "next": "fallback",
                "branches": {
                    "VERIFIED": "ship",
                    "BLOCKED": "unblock",
                    "true": "flagged",
                    "3": "three",
                },
            },
        },
        {"id": "ship"},
        {"id": "unblock"},
        {"id": "flagged"},
        {"id": "three"},
        {"id": "fallback"},
    )


@pytest.mark.parametrize(
    "status, target",
    [("VERIFIED", "ship"), ("BLOCKED", "unblock"), (True, "flagged"), (3, "three")],
)
def test_branch_chooses_by_value(branching, status, target):
    signal = signal_of(route(branching, "check", {"status": status}))
    assert (signal.decision, signal.next_step_id, signal.route) == ("advance", target, "branch")
    assert target not in signal.skipped_targets
    assert set(signal.skipped_targets) == {"ship", "unblock", "flagged", "three", "fallback"} - {
        target
    }


def test_branch_without_a_matching_value_or_with_an_error_takes_the_default_edge(branching):
    unmatched = signal_of(route(branching, "check", {"status": "UNKNOWN"}))
    assert (unmatched.next_step_id, unmatched.route) == ("fallback", "default")
    assert unmatched.evaluated_conditions[-1].matched is False
    failed = signal_of(route(branching, "check", {}))
    assert failed.next_step_id == "fallback"
    assert "no such member" in (failed.evaluated_conditions[-1].error or "")


def test_branch_on_reads_any_expression():
    wf = workflow(
        {
            "id": "check",
            "routing": {
                "kind": "branch",
                "branch_on": "outputs.score >= 0.5",
                "branches": {"true": "high", "false": "low"},
            },
        },
        {"id": "high"},
        {"id": "low"},
    )
    assert signal_of(route(wf, "check", {"score": 1})).next_step_id == "high"
    assert signal_of(route(wf, "check", {"score": 0.2})).next_step_id == "low"
    assert [branch_key(v) for v in (True, None, 2.0, 2.5, "x")] == ["true", "null", "2", "2.5", "x"]


# -- 5. loops: caps and history -------------------------------------------------------------------


@pytest.fixture
def microloop() -> WorkflowDefinition:
    return workflow(
        {"id": "author"},
        {
            "id": "critic",
            "depends_on": ["author"],
            "routing": {
                "kind": "loop",
                "next": "publish",
                "loop": {"target": "author", "max_iterations": 3},
                "conditions": [
                    {
                        "expr": "outputs.score >= 0.8 || size(steps.critic.history) >= 2",
                        "target": "publish",
                    }
                ],
            },
        },
        {"id": "publish", "depends_on": ["critic"]},
    )


def test_a_loop_goes_back_to_its_ancestor_and_skips_nothing(microloop):
    signal = signal_of(route(microloop, "critic", {"score": 0.1}, steps={"critic": StepView()}))
    assert (signal.decision, signal.next_step_id, signal.route) == ("loop", "author", "loop")
    assert signal.skipped_targets == []
    assert "going back 1 of 3" in signal.reason


def test_at_max_iterations_the_default_edge_is_taken(microloop):
    signal = signal_of(
        route(
            microloop,
            "critic",
            {"score": 0.1},
            loop_count=3,
            iteration=3,
            steps={"critic": StepView()},
        )
    )
    assert (signal.decision, signal.next_step_id, signal.route) == (
        "advance",
        "publish",
        "loop_exhausted",
    )
    assert "exhausted (3 of 3)" in signal.reason


def test_loop_exit_conditions_see_the_history_of_earlier_iterations(microloop):
    one = StepView(
        status="SUCCEEDED", outputs={"score": 0.2}, history=[{"score": 0.1}], iteration=1
    )
    two = StepView(
        status="SUCCEEDED",
        outputs={"score": 0.3},
        history=[{"score": 0.1}, {"score": 0.2}],
        iteration=2,
    )
    assert (
        signal_of(
            route(microloop, "critic", {"score": 0.2}, loop_count=1, steps={"critic": one})
        ).decision
        == "loop"
    )
    exit_signal = signal_of(
        route(microloop, "critic", {"score": 0.3}, loop_count=2, steps={"critic": two})
    )
    assert (exit_signal.next_step_id, exit_signal.route) == ("publish", "condition")


def test_a_condition_targeting_the_loop_target_is_capped_too(review):
    assert signal_of(route(review, "critic", {"score": 0, "status": "WEAK"})).decision == "loop"
    capped = signal_of(route(review, "critic", {"score": 0, "status": "WEAK"}, loop_count=2))
    assert (capped.next_step_id, capped.route) == ("publish", "loop_exhausted")
    assert capped.skipped_targets == ["gather", "escalate"]


def test_a_loop_without_a_default_edge_ends_at_the_cap():
    wf = workflow(
        {"id": "a"},
        {
            "id": "b",
            "depends_on": ["a"],
            "routing": {"kind": "loop", "loop": {"target": "a", "max_iterations": 1}},
        },
    )
    assert signal_of(route(wf, "b", loop_count=0)).decision == "loop"
    end = signal_of(route(wf, "b", loop_count=1))
    assert (end.decision, end.next_step_id, end.route) == ("end", None, "loop_exhausted")


# -- 6. detours -------------------------------------------------------------------------------------


def test_a_detour_runs_its_target_with_a_return_address(review):
    signal = signal_of(route(review, "critic", {"score": 0, "status": "NEEDS_SOURCES"}))
    assert (signal.decision, signal.next_step_id, signal.route, signal.return_to) == (
        "detour",
        "gather",
        "detour",
        "critic",
    )
    assert signal.skipped_targets == []


def test_the_detour_target_returns_to_the_declaring_step(review):
    signal = signal_of(route(review, "deeper", active_detour="gather"))
    assert (signal.next_step_id, signal.route, signal.skipped_targets) == (
        "gather",
        "detour_return",
        [],
    )
    back = signal_of(
        route(
            workflow(
                {
                    "id": "s",
                    "routing": {"next": "t", "detour": {"target": "d", "when": "outputs.need"}},
                },
                {"id": "d", "routing": {"next": "x"}},
                {"id": "t"},
                {"id": "x"},
            ),
            "d",
            active_detour="s",
        )
    )
    assert (back.decision, back.next_step_id, back.route, back.return_to) == (
        "advance",
        "s",
        "detour_return",
        "s",
    )
    assert back.skipped_targets == ["x"]


def test_returning_from_a_detour_does_not_take_it_again_and_does_not_skip_it():
    wf = workflow(
        {
            "id": "s",
            "routing": {
                "kind": "conditional",
                "next": "t",
                "detour": {"target": "d"},
                "conditions": [
                    {"expr": "outputs.need", "target": "d"},
                    {"expr": "outputs.other", "target": "u"},
                ],
            },
        },
        {"id": "d"},
        {"id": "t"},
        {"id": "u"},
    )
    assert signal_of(route(wf, "s", {"need": True})).decision == "detour"
    signal = signal_of(route(wf, "s", {"need": True, "other": False}, returning_from_detour=True))
    assert (signal.next_step_id, signal.route) == ("t", "default")
    assert signal.skipped_targets == ["u"]
    assert [c.error for c in signal.evaluated_conditions][1] == (
        "the detour already returned to this step; not taken again on this pass"
    )
    assert need_for_returning_critic_excludes_the_detour()


def need_for_returning_critic_excludes_the_detour() -> bool:
    wf = workflow(
        {
            "id": "s",
            "routing": {
                "kind": "conditional",
                "next": "t",
                "detour": {"target": "d"},
                "conditions": [{"expr": "false", "target": "u"}],
                "tie_breaker": {},
            },
        },
        {"id": "d"},
        {"id": "t"},
        {"id": "u"},
    )
    first = route(wf, "s")
    again = route(wf, "s", returning_from_detour=True)
    assert isinstance(first, TieBreakNeeded) and isinstance(again, TieBreakNeeded)
    return first.valid_targets == ["t", "u", "d"] and again.valid_targets == ["t", "u"]


def test_not_taking_the_detour_skips_its_target(review):
    assert signal_of(route(review, "critic", {"score": 0.9})).skipped_targets == [
        "gather",
        "escalate",
    ]


def test_a_nested_detour_is_rejected_and_the_detour_returns(review):
    signal = signal_of(route(review, "gather", active_detour="critic"))
    assert (signal.decision, signal.next_step_id, signal.route, signal.return_to) == (
        "advance",
        "critic",
        "detour_rejected",
        "critic",
    )
    assert "nested detour to deeper rejected" in signal.reason
    assert signal.skipped_targets == ["audit", "deeper"]


@pytest.mark.parametrize(
    "when, route_kind",
    [("outputs.go", "detour_rejected"), ("!outputs.go", "detour_return")],
)
def test_inside_a_detour_only_a_matching_detour_when_counts_as_a_nested_attempt(when, route_kind):
    wf = workflow(
        {"id": "a", "routing": {"kind": "linear", "next": "z", "detour": {"target": "b"}}},
        {
            "id": "b",
            "routing": {"kind": "linear", "next": "y", "detour": {"target": "c", "when": when}},
        },
        {"id": "c"},
        {"id": "y"},
        {"id": "z"},
    )
    signal = signal_of(route(wf, "b", {"go": True}, active_detour="a"))
    assert (signal.next_step_id, signal.route, signal.return_to) == ("a", route_kind, "a")
    assert [(c.expr, c.target, c.matched) for c in signal.evaluated_conditions] == [
        (when, "c", when == "outputs.go")
    ]


def test_a_detour_chosen_while_another_is_active_takes_the_default_edge(review):
    signal = signal_of(route(review, "gather", active_detour="someone_else"))
    assert (signal.decision, signal.next_step_id, signal.route) == (
        "advance",
        "audit",
        "detour_rejected",
    )
    assert "the detour of someone_else is active" in signal.reason


def test_outside_any_detour_the_same_step_may_detour(review):
    signal = signal_of(route(review, "gather"))
    assert (signal.decision, signal.next_step_id, signal.return_to) == (
        "detour",
        "deeper",
        "gather",
    )


# -- 7. tie-breaker ------------------------------------------------------------------------------------


def need_for(review: WorkflowDefinition, **options: Any) -> TieBreakNeeded:
    result = route(review, "critic", {"score": 0.5, "status": "UNSURE"}, **options)
    assert isinstance(result, TieBreakNeeded)
    return result


def test_the_tie_breaker_is_asked_only_about_graph_defined_targets(review):
    need = need_for(review)
    assert need.valid_targets == ["publish", "author", "escalate"]
    assert need.default_target == "publish"
    assert len(need.evaluated_conditions) == 5
    request = need.request("run-1", context="ctx")
    assert (request.step_id, request.valid_targets, request.default_target, request.timeout_s) == (
        "critic",
        ["publish", "author", "escalate"],
        "publish",
        30.0,
    )


def test_a_confident_valid_answer_routes_there(review):
    signal = signal_of(
        settle_tie_break(
            need_for(review), TieBreakAnswer(target="escalate", confidence=0.9, reasoning="risky")
        )
    )
    assert (signal.next_step_id, signal.route, signal.tie_breaker_used, signal.confidence) == (
        "escalate",
        "tie_breaker",
        True,
        0.9,
    )
    assert signal.reason == "tie-breaker chose escalate (confidence 0.90): risky"
    assert signal.skipped_targets == ["publish", "gather"]


def test_a_tie_breaker_choosing_the_loop_target_loops(review):
    signal = signal_of(
        settle_tie_break(need_for(review), TieBreakAnswer(target="author", confidence=0.8))
    )
    assert (signal.decision, signal.next_step_id, signal.tie_breaker_used) == (
        "loop",
        "author",
        True,
    )


@pytest.mark.parametrize(
    "answer, timed_out, why",
    [
        (None, True, "timed out after 30 s"),
        (None, False, "timed out after 30 s"),
        (TieBreakAnswer(target=None, outcome="timeout"), False, "timed out"),
        (TieBreakAnswer(target="gather", confidence=0.99), False, "answered 'gather', not one of"),
        (TieBreakAnswer(target="nowhere", confidence=0.99), False, "answered 'nowhere'"),
        (TieBreakAnswer(target="publish", outcome="invalid_answer"), False, "answered 'publish'"),
        (
            TieBreakAnswer(target=None, outcome="error", reasoning="HTTP 500"),
            False,
            "failed: HTTP 500",
        ),
    ],
)
def test_invalid_or_missing_answers_fall_back_to_the_default_edge_needing_a_human(
    review, answer, timed_out, why
):
    signal = signal_of(settle_tie_break(need_for(review), answer, timed_out=timed_out))
    assert (signal.next_step_id, signal.route, signal.needs_human, signal.tie_breaker_used) == (
        "publish",
        "default",
        True,
        True,
    )
    assert why in signal.reason
    assert signal.skipped_targets == ["gather", "escalate"]


@pytest.mark.parametrize("confidence", [float("nan"), float("-inf"), 0.69])
def test_a_confidence_that_is_not_above_the_threshold_reaches_a_person(review, confidence):
    human = settle_tie_break(
        need_for(review), TieBreakAnswer(target="author", confidence=confidence)
    )
    assert isinstance(human, HumanTieBreakNeeded)
    payload = human.interrupt_request().payload
    assert payload["confidence"] == (0.69 if confidence == 0.69 else None)


def test_a_person_is_told_the_suggestion_and_its_confidence(review):
    unsure = settle_tie_break(need_for(review), TieBreakAnswer(target="author", confidence=0.4))
    nan = settle_tie_break(
        need_for(review), TieBreakAnswer(target="author", confidence=float("nan"))
    )
    assert isinstance(unsure, HumanTieBreakNeeded) and isinstance(nan, HumanTieBreakNeeded)
    assert unsure.interrupt_request().prompt == (
        "Where should 'critic' go next? The model suggests 'author' with confidence 0.40."
    )
    assert nan.interrupt_request().prompt == (
        "Where should 'critic' go next? The model suggests 'author' without a usable confidence."
    )
    payload = unsure.interrupt_request().payload
    assert {key: payload.pop(key) for key in list(payload) if key != "evaluated_conditions"} == {
        "valid_targets": ["publish", "author", "escalate"],
        "default_target": "publish",
        "suggestion": "author",
        "confidence": 0.4,
        "confidence_threshold": 0.7,
        "reasoning": "",
        "hint": "",
        "unsure_because": "its confidence 0.40 is below the threshold 0.70",
        "outputs": {"score": 0.5, "status": "UNSURE"},
    }
    assert payload["evaluated_conditions"] == [
        condition.model_dump(mode="json") for condition in need_for(review).evaluated_conditions
    ]
    assert len(payload["evaluated_conditions"]) == 5
    assert nan.interrupt_request().payload["unsure_because"] == (
        "it gave no usable confidence (the threshold is 0.70)"
    )


def test_approving_takes_the_suggestion_whatever_value_comes_with_it(review):
    human = settle_tie_break(need_for(review), TieBreakAnswer(target="author", confidence=0.4))
    assert isinstance(human, HumanTieBreakNeeded)
    assert human.chosen_target(InterruptAnswer(action="approve", value="escalate")) == "author"
    assert human.chosen_target(InterruptAnswer(action="choose", value=3)) is None


def test_a_person_may_settle_a_tie_the_model_was_never_asked_about(review):
    need = need_for(review)
    chosen = settle_human_tie_break(need, "escalate")
    assert (chosen.next_step_id, chosen.needs_human, chosen.confidence, chosen.reason) == (
        "escalate",
        True,
        1.0,
        "a person chose escalate",
    )
    refused = settle_human_tie_break(need, "nowhere")
    assert (refused.next_step_id, refused.needs_human, refused.confidence) == ("publish", True, 0.0)
    assert refused.reason.startswith("a person was asked and chose 'nowhere', not one of")


def test_low_confidence_asks_a_person(review):
    human = settle_tie_break(
        need_for(review), TieBreakAnswer(target="author", confidence=0.4, reasoning="unsure")
    )
    assert isinstance(human, HumanTieBreakNeeded)
    request = human.interrupt_request()
    assert (request.kind, request.options) == ("tie_breaker", ["publish", "author", "escalate"])
    assert request.payload["suggestion"] == "author" and request.payload["confidence"] == 0.4
    assert request.default == InterruptAnswer(
        action="choose", value="publish", automatic=True, note="default edge"
    )
    chosen = settle_human_tie_break(
        human, human.chosen_target(InterruptAnswer(action="choose", value="escalate"))
    )
    assert (chosen.next_step_id, chosen.needs_human, chosen.tie_breaker_used) == (
        "escalate",
        True,
        True,
    )
    assert chosen.reason == "a person chose escalate (the model suggested author at 0.40)"
    approved = settle_human_tie_break(human, human.chosen_target(InterruptAnswer(action="approve")))
    assert approved.decision == "loop"
    refused = settle_human_tie_break(human, human.chosen_target(InterruptAnswer(action="reject")))
    assert (refused.next_step_id, refused.route, refused.needs_human) == (
        "publish",
        "default",
        True,
    )
    invalid = settle_human_tie_break(human, "gather")
    assert invalid.next_step_id == "publish" and "chose 'gather'" in invalid.reason


def test_exhausted_edges_are_not_offered_and_one_edge_left_needs_no_tie_breaker(review):
    assert need_for(review, loop_count=2).valid_targets == ["publish", "escalate"]
    wf = workflow(
        {"id": "a"},
        {
            "id": "b",
            "depends_on": ["a"],
            "routing": {
                "kind": "conditional",
                "next": "c",
                "conditions": [{"expr": "false", "target": "c"}],
                "loop": {"target": "a", "max_iterations": 1},
                "tie_breaker": {"valid_targets": ["c", "a"]},
            },
        },
        {"id": "c"},
    )
    assert isinstance(route(wf, "b"), TieBreakNeeded)
    signal = signal_of(route(wf, "b", loop_count=1))
    assert (signal.next_step_id, signal.route, signal.tie_breaker_used) == ("c", "default", False)


def test_a_disabled_tie_breaker_is_never_asked(review):
    critic = review.step("critic")
    disabled = critic.model_copy(
        update={
            "routing": critic.routing.model_copy(
                update={
                    "tie_breaker": critic.routing.tie_breaker.model_copy(update={"enabled": False})
                }
            )
        }
    )
    wf = review.model_copy(
        update={"steps": [disabled if s.id == "critic" else s for s in review.steps]}
    )
    signal = signal_of(route(wf, "critic", {"score": 0.5, "status": "UNSURE"}))
    assert (signal.next_step_id, signal.route) == ("publish", "default")


# -- 8. what a decision records (the run's history shows these) ------------------------


def test_a_detour_when_records_its_target_among_the_evaluated_conditions(review):
    critic = dict(CRITIC_ROUTING, conditions=[], detour={"target": "gather", "when": "true"})
    wf = workflow(
        {"id": "critic", "routing": critic},
        {"id": "gather"},
        {"id": "publish"},
        {"id": "author"},
        {"id": "escalate"},
    )
    signal = signal_of(route(wf, "critic", {"status": "OK"}))
    assert (signal.decision, signal.next_step_id) == ("detour", "gather")
    assert [(c.expr, c.target, c.matched) for c in signal.evaluated_conditions][-1] == (
        "true",
        "gather",
        True,
    )


def test_a_nested_detour_attempt_records_the_condition_target(review):
    signal = signal_of(route(review, "gather", active_detour="critic"))
    assert [(c.expr, c.target, c.matched) for c in signal.evaluated_conditions] == [
        ("true", "deeper", True)
    ]


def test_inside_a_detour_a_condition_to_another_target_is_not_a_nested_attempt(review):
    routing = {
        "kind": "conditional",
        "next": "audit",
        "conditions": [{"expr": "true", "target": "audit"}],
        "detour": {"target": "deeper"},
    }
    wf = workflow(
        {"id": "critic", "routing": {"kind": "conditional", "detour": {"target": "gather"}}},
        {"id": "gather", "routing": routing},
        {"id": "deeper"},
        {"id": "audit"},
    )
    signal = signal_of(route(wf, "gather", active_detour="critic"))
    assert (signal.route, signal.evaluated_conditions) == ("detour_return", [])


def test_a_branch_records_its_target_and_an_evaluation_error_as_not_matched(branching):
    chosen = signal_of(route(branching, "check", {"status": "VERIFIED"}))
    assert [(c.target, c.matched) for c in chosen.evaluated_conditions] == [("ship", True)]
    failed = signal_of(route(branching, "check", {}))
    assert [c.matched for c in failed.evaluated_conditions] == [False]
    assert failed.evaluated_conditions[0].error


def test_not_taking_the_detour_again_records_the_detour_target_as_not_matched():
    wf = workflow(
        {
            "id": "s",
            "routing": {
                "kind": "conditional",
                "next": "t",
                "detour": {"target": "d"},
                "conditions": [{"expr": "true", "target": "d"}],
            },
        },
        {"id": "d"},
        {"id": "t"},
    )
    signal = signal_of(route(wf, "s", returning_from_detour=True))
    assert [(c.expr, c.target, c.matched) for c in signal.evaluated_conditions][-1] == (
        "detour to d",
        "d",
        False,
    )


def test_skipped_targets_leave_out_the_loop_target_ancestors_and_the_step_itself():
    wf = workflow(
        {"id": "a"},
        {"id": "b", "depends_on": ["a"]},
        {
            "id": "c",
            "depends_on": ["b"],
            "routing": {
                "kind": "loop",
                "next": "d",
                "loop": {"target": "b", "max_iterations": 2},
                "conditions": [
                    {"expr": "outputs.go", "target": "e"},
                    {"expr": "false", "target": "a"},
                    {"expr": "false", "target": "c"},
                ],
            },
        },
        {"id": "d", "depends_on": ["c"]},
        {"id": "e", "depends_on": ["c"]},
    )
    assert signal_of(route(wf, "c", {"go": True})).skipped_targets == ["d"]
    assert signal_of(route(wf, "c", {"go": False}, loop_count=2)).skipped_targets == ["e"]


def test_an_output_terminate_says_why_in_one_sentence(review):
    signal = signal_of(route(review, "critic", {"terminate": True}))
    assert signal.reason == "the step's outputs set terminate: true"


def test_the_tie_breaker_request_carries_the_hint_the_context_and_the_timeout(review):
    need = need_for(review)
    request = need.request("run-1", context="what the run found")
    assert (request.hint, request.context, request.timeout_s) == (
        need.hint,
        "what the run found",
        need.timeout_s,
    )
    assert need.request("run-1").context == ""


def test_a_confidence_exactly_at_the_threshold_is_taken(review):
    signal = signal_of(
        settle_tie_break(need_for(review), TieBreakAnswer(target="escalate", confidence=0.7))
    )
    assert (signal.next_step_id, signal.needs_human) == ("escalate", False)
    assert signal.reason == "tie-breaker chose escalate (confidence 0.70)"


def test_fallback_reasons_name_the_error_and_list_the_targets(review):
    failed = signal_of(
        settle_tie_break(need_for(review), TieBreakAnswer(target=None, outcome="error"))
    )
    assert failed.reason == "tie-breaker failed: error; default edge → publish"
    invalid = signal_of(settle_tie_break(need_for(review), TieBreakAnswer(target="gather")))
    assert "not one of publish, author, escalate;" in invalid.reason
    refused = settle_human_tie_break(need_for(review), "nowhere")
    assert "not one of publish, author, escalate;" in refused.reason


def test_a_person_choosing_after_a_confidence_that_is_no_number_is_told_so(review):
    human = settle_tie_break(
        need_for(review), TieBreakAnswer(target="author", confidence=float("nan"))
    )
    assert isinstance(human, HumanTieBreakNeeded)
    chosen = settle_human_tie_break(human, "escalate")
    assert chosen.reason == (
        "a person chose escalate (the model suggested author without a usable confidence)"
    )
    assert (chosen.confidence, chosen.needs_human) == (1.0, True)


def test_a_stored_detour_that_could_never_start_is_rejected_naming_what_it_waits_on():
    """The loader refuses such a detour; a definition stored before that check still routes."""
    wf = workflow(
        {
            "id": "s",
            "routing": {
                "kind": "conditional",
                "next": "x",
                "detour": {"target": "d", "when": "true"},
            },
        },
        {"id": "x", "depends_on": ["s"]},
        {"id": "y", "depends_on": ["s"]},
        {"id": "d", "depends_on": ["s", "x", "y"]},
    )
    signal = signal_of(route(wf, "s"))
    assert (signal.decision, signal.next_step_id, signal.route) == (
        "advance",
        "x",
        "detour_rejected",
    )
    assert signal.reason == (
        "detour.when matched: true; detour to d rejected: it depends on x, y, "
        "which cannot run before s has passed; default edge → x"
    )


def test_a_detour_that_does_not_return_has_no_return_address(review):
    wf = workflow(
        {
            "id": "s",
            "routing": {
                "kind": "conditional",
                "next": "t",
                "detour": {"target": "d", "when": "true", "returns": False},
            },
        },
        {"id": "d"},
        {"id": "t"},
    )
    signal = signal_of(route(wf, "s"))
    assert (signal.decision, signal.next_step_id, signal.return_to) == ("detour", "d", None)


def test_an_expression_that_does_not_parse_counts_as_not_matched_with_the_parse_error():
    """Only a definition that bypassed the loader can hold one; routing still falls through."""
    wf = workflow(
        {
            "id": "s",
            "routing": {
                "kind": "conditional",
                "next": "t",
                "conditions": [{"expr": "outputs.(", "target": "u"}],
            },
        },
        {"id": "t"},
        {"id": "u"},
    )
    signal = signal_of(route(wf, "s"))
    assert (signal.next_step_id, signal.route) == ("t", "default")
    [evaluated] = signal.evaluated_conditions
    assert (evaluated.matched, evaluated.target) == (False, "u")
    assert evaluated.error and evaluated.error != "None"


def test_the_tie_breaker_is_given_the_step_s_hint_and_timeout():
    wf = workflow(
        {
            "id": "s",
            "routing": {
                "kind": "conditional",
                "next": "a",
                "conditions": [{"expr": "false", "target": "b"}],
                "tie_breaker": {"prompt_hint": "prefer b when unsure", "timeout_s": 5},
            },
        },
        {"id": "a"},
        {"id": "b"},
    )
    need = route(wf, "s")
    assert isinstance(need, TieBreakNeeded)
    request = need.request("run-1")
    assert (request.hint, request.timeout_s) == ("prefer b when unsure", 5.0)
