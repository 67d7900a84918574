"""Named regressions: each defect class the differential test found (or issue 10 names),
on both engines, checked against the reference interpreter where it applies.

The rules are README "Workflow files → What a run means"; tests/engine/reference/
is their second reading.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from engine.context import InterruptAnswer, InterruptRequest
from engine.errors import WorkflowLoadError
from engine.events import InterruptRaised, StepRetrying, StepStarted
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.lifecycle import CancelRequest, EngineBase, ScheduleEnd
from engine.loader import load_workflow_text
from engine.protocol import EngineCapabilities, RunContext
from engine.runner import StepRunner
from engine.spec import WorkflowDefinition
from engine.states import RunStatus
from engine.store import InMemoryRunStore
from tests.engine.kahn_helpers import TEST_REGISTRY, answering, fresh_gates
from tests.engine.reference.differential import respond, run_all
from tests.engine.reference.interpreter import interpret

ENGINES = {"kahn": KahnEngine, "langgraph": LangGraphEngine}
INPUTS = {"n": 3, "xs": [4, 5, 6]}


def load(steps: list[dict[str, Any]], **fields: Any) -> WorkflowDefinition:
    data = {
        "name": "regression",
        "inputs": {
            "n": {"type": "int", "default": 3},
            "xs": {"type": "list", "default": [4, 5, 6]},
        },
        "steps": steps,
        **fields,
    }
    return load_workflow_text(json.dumps(data), source="regression.yaml", registry=TEST_REGISTRY)


def probe(step_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "uses": "ref.probe", **fields}


def agree(wf: WorkflowDefinition) -> dict[str, Any]:
    """Run on both engines and the reference; they agree on everything compared."""
    found = run_all(wf, INPUTS)
    reference = found["reference"].comparable()
    assert found["kahn"].comparable() == reference
    assert found["langgraph"].comparable() == reference
    assert found["canonical"] == [] and found["order_violations"] == []
    return found


def execute(engine: str, wf: WorkflowDefinition, **context: Any) -> tuple[Any, InMemoryRunStore]:
    store = InMemoryRunStore()
    run = RunContext(store=store, **context)
    result = asyncio.run(ENGINES[engine](registry=TEST_REGISTRY).execute(wf, run))
    return result, store


# -- loops -------------------------------------------------------------------------------------


def test_a_loop_body_step_with_a_dependent_outside_the_body_runs_it_once_after_the_last_pass() -> (
    None
):
    """LangGraph raised CheckpointBehind here; the outside step now waits for the loop."""
    wf = load(
        [
            probe("s0"),
            probe("s1", depends_on=["s0"]),
            probe("outside", depends_on=["s1"]),
            probe(
                "s2",
                depends_on=["s1"],
                routing={"kind": "loop", "loop": {"target": "s0", "max_iterations": 2}},
            ),
        ]
    )
    found = agree(wf)
    steps = found["kahn"].steps
    assert steps["outside"][:3] == ("SUCCEEDED", 0, 1)
    assert steps["s1"][:3] == ("SUCCEEDED", 2, 3)


def test_nested_loops_count_the_inner_loop_afresh_on_each_outer_pass() -> None:
    wf = load(
        [
            probe("outer_start"),
            probe("inner_start", depends_on=["outer_start"]),
            probe(
                "inner_end",
                depends_on=["inner_start"],
                routing={"kind": "loop", "loop": {"target": "inner_start", "max_iterations": 2}},
            ),
            probe(
                "outer_end",
                depends_on=["inner_end"],
                routing={"kind": "loop", "loop": {"target": "outer_start", "max_iterations": 1}},
            ),
        ]
    )
    found = agree(wf)
    # two outer passes, each with the inner loop going back twice: 3 inner passes each
    assert found["kahn"].steps["inner_end"][2] == 6
    assert found["kahn"].steps["outer_end"][2] == 2


def test_a_loop_exit_on_arithmetic_fires() -> None:
    """``(iteration + 1) % 2 == 0`` raised "no matching overload" and never matched."""
    wf = load(
        [
            probe("work"),
            probe(
                "check",
                depends_on=["work"],
                routing={
                    "kind": "conditional",
                    "conditions": [{"expr": "(iteration + 1) % 2 == 1", "target": "done"}],
                    "next": "work_again",
                    "loop": {"target": "work", "max_iterations": 5},
                },
            ),
            probe("done"),
            probe("work_again"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["check"][2] == 1  # pass 0: (0 + 1) % 2 == 1 → done
    assert found["kahn"].steps["done"][0] == "SUCCEEDED"
    assert found["kahn"].steps["work_again"][0] == "SKIPPED"


def test_a_step_skipped_in_a_later_pass_hides_its_earlier_outputs() -> None:
    wf = load(
        [
            probe("start"),
            probe("sometimes", depends_on=["start"], when="iteration == 0"),
            probe(
                "reader",
                depends_on=["start", "sometimes"],
                trigger="all_done",
                inputs={"x": "has(steps.sometimes.outputs.v) ? 1 : 0"},
                routing={"kind": "loop", "loop": {"target": "start", "max_iterations": 1}},
            ),
        ]
    )
    found = agree(wf)
    reader = found["kahn"].steps["reader"][3]
    assert reader["x"] == 0 and reader["seen"] == ["start"]  # has() and ctx.upstream agree
    assert found["kahn"].steps["sometimes"][3] == {}


# -- detours ------------------------------------------------------------------------------------


def test_a_detour_target_with_its_own_dependency_waits_for_it() -> None:
    wf = load(
        [
            probe("first"),
            probe("second", depends_on=["first"]),
            probe("side", depends_on=["second"]),
            probe(
                "decide",
                routing={
                    "kind": "linear",
                    "next": "after",
                    "detour": {"target": "context", "when": "outputs.n == 0"},
                },
            ),
            probe("context", depends_on=["side"]),
            probe("after"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["decide"][:3] == ("SUCCEEDED", 1, 2)
    assert found["kahn"].steps["context"][:3] == ("SUCCEEDED", 0, 1)


def test_a_detour_target_that_fails_still_returns_to_the_declaring_step() -> None:
    wf = load(
        [
            probe(
                "decide",
                routing={
                    "kind": "linear",
                    "next": "after",
                    "detour": {"target": "context", "when": "outputs.n == 0"},
                },
            ),
            probe("context", optional=True, config={"fail_times": 1}),
            probe("after"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["context"][:3] == ("FAILED", 0, 1)
    assert found["kahn"].steps["decide"][:3] == ("SUCCEEDED", 1, 2)
    assert found["kahn"].steps["after"][0] == "SUCCEEDED"


@pytest.mark.parametrize(
    ("context", "settled"),
    [
        ({"when": "false"}, "SKIPPED"),
        ({"depends_on": ["broken"]}, "UPSTREAM_FAILED"),
    ],
)
def test_a_detour_target_that_does_not_run_still_returns_to_the_declaring_step(
    context: dict[str, Any], settled: str
) -> None:
    wf = load(
        [
            probe("broken", optional=True, config={"fail_times": 1}),
            probe(
                "decide",
                depends_on=["broken"],
                trigger="all_done",
                routing={
                    "kind": "linear",
                    "next": "after",
                    "detour": {"target": "context", "when": "outputs.n == 0"},
                },
            ),
            probe("context", optional=True, **context),
            probe("after"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["context"][0] == settled
    assert found["kahn"].steps["decide"][:3] == ("SUCCEEDED", 1, 2)
    assert found["kahn"].steps["after"][0] == "SUCCEEDED"


def test_a_detour_target_that_terminates_the_run_does_not_return() -> None:
    wf = load(
        [
            probe(
                "decide",
                routing={
                    "kind": "linear",
                    "next": "after",
                    "detour": {"target": "context", "when": "outputs.n == 0"},
                },
            ),
            probe("context", config={"terminate_at": 0}),
            probe("after", depends_on=["decide"]),
        ]
    )
    found = agree(wf)
    assert found["kahn"].status == "COMPLETED"
    assert found["kahn"].steps["decide"][:3] == ("SKIPPED", 1, 1), "its return pass is cut off"
    assert found["kahn"].steps["after"][0] == "SKIPPED"


def test_a_detour_target_that_terminates_the_run_cuts_off_what_follows_its_declarer() -> None:
    """Even a step that would run whatever its dependencies ended (``all_done``)."""
    wf = load(
        [
            probe(
                "decide",
                routing={
                    "kind": "linear",
                    "next": "after",
                    "detour": {"target": "context", "when": "outputs.n == 0"},
                },
            ),
            probe("context", config={"terminate_at": 0}),
            probe("after", depends_on=["decide"], trigger="all_done"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].status == "COMPLETED"
    assert found["kahn"].steps["after"][:3] == ("SKIPPED", 0, 0)


def test_a_detour_target_that_terminates_the_run_cuts_off_its_own_dependents() -> None:
    wf = load(
        [
            probe(
                "decide",
                routing={
                    "kind": "linear",
                    "next": "after",
                    "detour": {"target": "context", "when": "outputs.n == 0"},
                },
            ),
            probe("context", config={"terminate_at": 0}),
            probe("summary", depends_on=["context"]),
            probe("after"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].status == "COMPLETED"
    assert found["kahn"].steps["summary"][:3] == ("SKIPPED", 0, 0)


def test_a_detour_declarer_brought_back_by_a_loop_detours_again() -> None:
    wf = load(
        [
            probe(
                "decide",
                routing={
                    "kind": "linear",
                    "next": "check",
                    "detour": {"target": "context", "when": "true"},
                },
            ),
            probe("context"),
            probe(
                "check",
                depends_on=["decide"],
                routing={
                    "kind": "loop",
                    "next": "done",
                    "loop": {"target": "decide", "max_iterations": 1},
                },
            ),
            probe("done"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["context"][2] == 2, "one detour on each pass of the loop"


def _detour_to_a_step_after_its_declarer() -> list[dict[str, Any]]:
    return [
        probe(
            "decide",
            routing={
                "kind": "linear",
                "next": "middle",
                "detour": {"target": "context", "when": "true"},
            },
        ),
        probe("middle"),
        probe("context", depends_on=["middle"]),
    ]


def test_a_detour_whose_target_waits_on_the_declaring_step_is_refused_by_the_loader() -> None:
    with pytest.raises(WorkflowLoadError) as refused:
        load(_detour_to_a_step_after_its_declarer())
    assert str(refused.value).startswith("regression.yaml:")
    assert "detour target 'context' depends on 'middle', which runs only after 'decide'" in str(
        refused.value
    )


def test_a_stored_detour_whose_target_waits_on_the_declaring_step_is_rejected_not_pending() -> None:
    """Kahn reported COMPLETED with steps never run; a definition stored before the loader
    refused this shape (runs keep their definition) has the detour rejected at run time."""
    wf = WorkflowDefinition.model_validate(
        {"name": "stored", "steps": _detour_to_a_step_after_its_declarer()}
    )
    found = agree(wf)
    assert found["kahn"].status == "COMPLETED"
    assert {state[0] for state in found["kahn"].steps.values()} <= {"SUCCEEDED", "SKIPPED"}


# -- stops ---------------------------------------------------------------------------------------


def _terminate_beside_a_sibling() -> WorkflowDefinition:
    return load(
        [
            {"id": "slow", "uses": "test.gate", "config": {"wait": "stopped"}},
            {"id": "after_slow", "uses": "test.gate", "depends_on": ["slow"]},
            {
                "id": "stopper",
                "uses": "test.gate",
                "config": {"open": "stopped"},
                "routing": {"kind": "linear", "next": "cut", "terminate_when": "true"},
            },
            {"id": "cut", "uses": "test.gate"},
        ]
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_terminate_in_one_branch_lets_a_running_sibling_finish_on_both_engines(engine: str) -> None:
    """Kahn cancelled the running sibling (SKIPPED), LangGraph let it finish: now both
    finish it, and what the sibling leads to runs — the terminating step cuts off only
    what it leads to."""
    fresh_gates("stopped")
    result, _ = execute(engine, _terminate_beside_a_sibling())
    statuses = {k: v.value for k, v in result.step_statuses.items()}
    assert statuses == {
        "slow": "SUCCEEDED",
        "after_slow": "SUCCEEDED",
        "stopper": "SUCCEEDED",
        "cut": "SKIPPED",
    }
    assert (result.status, result.reason) == (RunStatus.COMPLETED, "terminated by stopper")


def test_a_run_with_a_failed_required_step_is_not_completed_by_a_termination() -> None:
    wf = load(
        [
            probe("broken", config={"fail_times": 1}),
            probe("stopper", routing={"kind": "linear", "terminate_when": "true"}),
        ]
    )
    found = agree(wf)
    assert found["kahn"].status == "FAILED"


def test_a_limit_lets_the_steps_already_running_finish() -> None:
    wf = load([probe(f"p{i}") for i in range(4)], limits={"max_step_runs": 2})
    for engine in ENGINES:
        result, store = execute(engine, wf)
        assert result.status == RunStatus.PARTIAL
        started = [e for e in store.events(result.run_id) if isinstance(e, StepStarted)]
        assert len(started) == 2
        assert all(s.value not in ("PENDING", "RUNNING") for s in result.step_statuses.values())


# -- the invariant of every run -------------------------------------------------------------------


class _StuckScheduler(EngineBase):
    """A scheduler with a defect: it returns before running anything."""

    name = "stuck"
    capabilities = EngineCapabilities(
        cycles=False, interrupts_hold_superstep=False, checkpoints=False, fork=False
    )

    async def schedule(self, runner: StepRunner, cancel: CancelRequest) -> ScheduleEnd:
        return ScheduleEnd()


def test_a_scheduler_that_leaves_steps_unsettled_fails_the_run_naming_them() -> None:
    wf = load([probe("a"), probe("b", depends_on=["a"])])
    store = InMemoryRunStore()
    result = asyncio.run(
        _StuckScheduler(registry=TEST_REGISTRY).execute(wf, RunContext(store=store))
    )
    assert result.status == RunStatus.FAILED
    assert "a, b never settled" in result.reason
    assert result.reason == (
        "the stuck scheduler ended with a, b never settled "
        "(an engine defect; please report it with this run)"
    )
    assert {s.value for s in result.step_statuses.values()} == {"FAILED"}
    assert [e for e in store.events(result.run_id) if e.kind == "budget"] == [], (
        "a step that never ran spent nothing"
    )


# -- interrupts and resume -----------------------------------------------------------------------


def _asking(limit: int) -> WorkflowDefinition:
    return load(
        [
            probe("first"),
            probe("ask", depends_on=["first"], interrupt={"after": True, "prompt": "approve?"}),
            probe("last", depends_on=["ask"]),
        ],
        limits={"max_step_runs": limit},
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_resuming_from_waiting_counts_the_waiting_step_once(engine: str) -> None:
    """With max_step_runs exactly the steps' count: COMPLETED in one go, and after WAITING."""
    wf = _asking(3)
    in_process, _ = execute(engine, wf, responder=respond)
    assert in_process.status == RunStatus.COMPLETED
    store = InMemoryRunStore()
    first = asyncio.run(
        ENGINES[engine](registry=TEST_REGISTRY).execute(wf, RunContext(store=store))
    )
    assert first.status == RunStatus.WAITING
    answers = {"ask": InterruptAnswer(action="approve")}
    resumed = asyncio.run(
        ENGINES[engine](registry=TEST_REGISTRY).resume(
            first.run_id, RunContext(store=store, responder=answering(answers))
        )
    )
    assert (resumed.status, store.get_run(first.run_id).engine_state["step_runs"]) == (
        RunStatus.COMPLETED,
        3,
    )


def test_a_step_run_again_for_an_answer_does_not_repeat_its_failed_attempts() -> None:
    """LangGraph re-runs a node from its first line after an answer: the attempts that
    failed before the interrupt are not run (nor announced) again."""
    wf = load([probe("flaky", config={"fail_times": 1}, retries=1, interrupt={"after": True})])
    found = agree(wf)
    assert found["kahn"].steps["flaky"][0] == "SUCCEEDED"
    result, store = execute("langgraph", wf, responder=respond)
    events = store.events(result.run_id)
    assert sum(isinstance(e, StepRetrying) for e in events) == 1
    assert sum(isinstance(e, InterruptRaised) for e in events) == 1


def test_the_reference_answers_interrupts_like_the_automatic_responder() -> None:
    wf = load([probe("ask", interrupt={"before": True, "prompt": "reject this"})])
    assert interpret(wf, INPUTS).steps["ask"].status == "SKIPPED"
    request = InterruptRequest(kind="approval", prompt="reject this")
    answer = asyncio.run(respond(None, request))  # type: ignore[arg-type]
    assert answer.action == "reject"


def test_two_loops_sharing_a_target_in_parallel_branches_do_not_wait_on_each_other() -> None:
    """Shrunk from the differential suite: each router was outside the other's body and
    waited for it, through a dependency — every step after the target stayed PENDING."""
    wf = load(
        [
            probe("target"),
            probe("left", depends_on=["target"]),
            probe(
                "left_router",
                depends_on=["target", "left"],
                routing={"kind": "loop", "loop": {"target": "target", "max_iterations": 1}},
            ),
            probe(
                "right_router",
                depends_on=["target"],
                routing={"kind": "loop", "loop": {"target": "target", "max_iterations": 2}},
            ),
        ]
    )
    found = agree(wf)
    assert found["kahn"].status == "COMPLETED"
    assert {state[0] for state in found["kahn"].steps.values()} == {"SUCCEEDED"}


def test_the_safety_bound_counts_runs_in_waves_on_both_engines_and_the_reference() -> None:
    """Shrunk from the differential suite: two steps ready together both run before the
    step after them routes, so the bound is reached at its decision."""
    wf = load(
        [
            probe("first"),
            probe("decider", depends_on=["first"], config={"terminate_at": 0}),
            probe("beside"),
        ],
        limits={"max_step_runs": 3},
    )
    found = run_all(wf, INPUTS)
    assert found["reference"].status == found["kahn"].status == found["langgraph"].status
    assert found["kahn"].status == "PARTIAL"


# -- found at the merge of the engine branches ---------------------------------------------------


def test_a_detour_targets_dependents_wait_for_the_declarers_return_pass() -> None:
    """The return pass terminates: on Kahn the target's other dependent used to run beside it
    (SUCCEEDED) while the reference cut it off first — timing decided. It now waits."""
    wf = load(
        [
            probe(
                "s0",
                config={"terminate_at": 1},
                routing={
                    "kind": "conditional",
                    "conditions": [{"expr": "true", "target": "s1"}],
                    "detour": {"target": "s1", "when": "true"},
                },
            ),
            probe("s1"),
            probe("s2", depends_on=["s1"]),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["s2"][0] == "SKIPPED"


def test_several_terminations_name_the_first_terminating_step_in_the_file() -> None:
    """Three roots terminate side by side; the step they all lead to, and the run, name s0 on
    both engines (it used to name whichever finished first)."""
    wf = load(
        [
            probe("s0", config={"terminate_at": 0}),
            probe("s1", config={"terminate_at": 0}),
            probe("s2", config={"terminate_at": 0}),
            probe("join", depends_on=["s0", "s1", "s2"], trigger="all_done"),
        ]
    )
    agree(wf)
    for engine in ENGINES:
        result, store = execute(engine, wf, inputs=INPUTS)
        [skipped] = [e for e in store.events(result.run_id) if e.kind == "step_skipped"]
        assert skipped.reason == "run stopped: terminated by s0", engine
        assert result.reason == "terminated by s0", engine  # the run's own reason too


# -- which loops a step outside their bodies waits for (found by mutation testing) -----------------


def _loop(step_id: str, target: str, times: int, *depends_on: str) -> dict[str, Any]:
    return probe(
        step_id,
        depends_on=list(depends_on),
        routing={"kind": "loop", "loop": {"target": target, "max_iterations": times}},
    )


def test_a_step_waits_for_a_later_declared_loop_whose_body_it_reads() -> None:
    """The first loop in the file has nothing to do with ``reader``: it still waits for the
    second one, whose body it depends on, and runs once after that loop's last pass."""
    wf = load(
        [
            probe("a0"),
            _loop("a1", "a0", 1, "a0"),
            probe("b0"),
            _loop("b1", "b0", 2, "b0"),
            probe("reader", depends_on=["b0"], inputs={"x": "steps.b0.outputs.n"}),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["reader"][:3] == ("SUCCEEDED", 0, 1)
    assert found["kahn"].steps["reader"][3]["x"] == 2  # b0's last pass


def test_a_step_in_an_outer_loop_waits_for_the_inner_loop_whose_body_it_reads() -> None:
    """``reader`` is in the outer loop's body (declared first) and reads the inner loop's
    target: each outer pass it runs once, after the inner loop's last pass."""
    wf = load(
        [
            probe("outer_start"),
            probe("inner_start", depends_on=["outer_start"]),
            _loop("outer_end", "outer_start", 1, "reader", "inner_end"),
            _loop("inner_end", "inner_start", 2, "inner_start"),
            probe(
                "reader", depends_on=["inner_start"], inputs={"x": "steps.inner_start.outputs.n"}
            ),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["reader"][:3] == ("SUCCEEDED", 1, 2)
    # inner_start's sixth pass (0-5): the inner loop's last in the second outer pass
    assert found["kahn"].steps["reader"][3]["x"] == 5


def test_a_step_reading_a_loop_body_waits_for_an_overlapping_loop_that_brings_its_router_back() -> (
    None
):
    """make fuzz (a fork of it): ``outer`` goes back to ``inner``, the router of a loop to
    ``start``, which counts afresh and runs ``start`` again — so ``reader`` waits for ``outer``
    too. Kahn ran it beside ``outer`` (after ``start``'s second pass, of three); the
    reference, settling ``outer`` first by name, after the third."""
    wf = load(
        [
            probe("start"),
            _loop("inner", "start", 1, "start"),
            _loop("outer", "inner", 1, "inner"),
            probe("reader", depends_on=["start"], inputs={"x": "steps.start.outputs.n"}),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["start"][:3] == ("SUCCEEDED", 2, 3)
    assert found["kahn"].steps["reader"][:3] == ("SUCCEEDED", 0, 1)
    assert found["kahn"].steps["reader"][3]["x"] == 2  # start's last pass


def test_loop_waits_are_taken_in_workflow_order_and_one_closing_a_cycle_skips_only_itself() -> None:
    """Two loops share ``target`` in parallel branches; ``a_right`` comes after the left
    branch in dependency order (not by name), so the left branch waits for its loop, not
    the other way round. Waiting for the left loop would close a cycle for ``a_right``, which
    still waits for the third loop, whose body it reads."""
    wf = load(
        [
            probe("target"),
            probe("left", depends_on=["target"], inputs={"x": "steps.target.outputs.n"}),
            _loop("left_router", "target", 1, "target", "left"),
            {
                **_loop("a_right", "target", 2, "target", "c0"),
                "when": "steps.c0.outputs.n == 1",  # false before the third loop's last pass
            },
            probe("c0"),
            _loop("c1", "c0", 1, "c0"),
        ]
    )
    found = agree(wf)
    runs = {step_id: state[2] for step_id, state in found["kahn"].steps.items()}
    # a_right's loop runs target three times before left starts; then the left loop once more
    assert runs == {"target": 4, "left": 2, "left_router": 2, "a_right": 3, "c0": 2, "c1": 2}
    assert found["kahn"].steps["left"][3]["x"] == 3  # target's fourth pass


# -- found by the differential suite after the mutation work -------------------------------------


def test_a_limit_cuts_off_the_return_pass_of_a_detour_whose_target_it_skipped() -> None:
    """Shrunk: the bound is reached before the detour target runs; skipping the target sent
    the declaring step back to PENDING for its return, and the PARTIAL run kept it PENDING
    (on both engines and the reference). The return pass is cut off, SKIPPED, too.

    The bound is reached one step after ``s0`` decides its detour, on every engine: the
    steps that start beside ``s0`` are one (``s1``), counted before its decision whether a
    scheduler starts them together (Kahn, in one transaction) or one after the other."""
    wf = load(
        [
            probe(
                "s0",
                routing={
                    "kind": "conditional",
                    "conditions": [{"expr": "true", "target": "s3"}],
                    "detour": {"target": "s3", "when": "true"},
                },
            ),
            probe("s1"),
            probe("s2", depends_on=["s1"]),
            probe("s3", depends_on=["s0", "s2"]),
        ],
        limits={"max_step_runs": 3},
    )
    found = run_all(wf, INPUTS)
    expected = {
        "s0": ("SKIPPED", 1, 1),
        "s1": ("SUCCEEDED", 0, 1),
        "s2": ("SUCCEEDED", 0, 1),
        "s3": ("SKIPPED", 0, 0),
    }
    for name in ("reference", "kahn", "langgraph"):
        assert found[name].status == "PARTIAL", name
        assert {k: v[:3] for k, v in found[name].steps.items()} == expected, name
    for engine in ENGINES:
        result, store = execute(engine, wf, inputs=INPUTS)
        reasons = {k: r.reason for k, r in store.step_results(result.run_id).items()}
        assert reasons["s0"] == reasons["s3"] == "run stopped: max_step_runs 3 reached", engine


def test_a_loop_exits_on_the_iteration_another_step_has_reached() -> None:
    """``steps.<id>.iteration`` in a routing condition: the loop goes back until the step it
    reads is in its third pass (it read 0 on every pass when the view left it out, and went
    back until the loop was exhausted)."""
    wf = load(
        [
            probe("work"),
            probe(
                "check",
                depends_on=["work"],
                routing={
                    "kind": "conditional",
                    "conditions": [{"expr": "steps.work.iteration < 2", "target": "work"}],
                    "next": "done",
                    "loop": {"target": "work", "max_iterations": 5},
                },
            ),
            probe("done"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["work"][:3] == ("SUCCEEDED", 2, 3)
    assert found["kahn"].steps["done"][0] == "SUCCEEDED"


# -- found by make fuzz: a detour target outside a loop that its declarer is in ---------------------


def _detour_from_a_loop_body(decide_when: str, detour_when: str) -> list[dict[str, Any]]:
    """``decide`` is the target of ``check``'s loop and declares a detour to ``context``,
    which depends on it from outside the loop's body (the shape of make fuzz's two cases)."""
    decide = probe(
        "decide",
        optional=True,
        routing={
            "kind": "linear",
            "next": "after",
            "detour": {"target": "context", "when": detour_when},
        },
    )
    if decide_when:
        decide["when"] = decide_when
    else:
        decide["trigger"] = "all_success"
    return [
        decide,
        probe("side", optional=True),
        probe(
            "after",
            config={"value": 0, "terminate_at": 0},
            trigger="all_success",
            optional=True,
            **({} if decide_when else {"depends_on": ["decide", "side"]}),
        ),
        probe(
            "check",
            config={"value": 0, "statuses": ["A", "B"]},
            depends_on=["decide", "side", *(["after"] if decide_when else [])],
            optional=True,
            routing={"kind": "loop", "loop": {"target": "decide", "max_iterations": 1}},
        ),
        probe("context", depends_on=["decide", "side"], optional=True),
    ]


def test_a_detour_target_outside_its_declarers_loop_waits_for_the_loop_unless_detoured_to() -> None:
    """``decide`` is skipped on pass 0 (``when: iteration >= 1``), so ``context`` could run
    beside ``check``, whose loop then brought ``decide`` back to detour to ``context`` while
    that older pass was running: Kahn ran ``context`` twice, LangGraph once. ``context``
    now waits for the loop like any outside dependent, except as the active detour's target."""
    found = agree(load(_detour_from_a_loop_body("iteration >= 1", "true")))
    assert found["kahn"].steps["context"][:3] == ("SUCCEEDED", 0, 1)
    assert found["kahn"].steps["decide"][:3] == ("SUCCEEDED", 2, 2)


def test_a_detour_target_skipped_beside_its_declarers_loop_is_not_reset_by_the_detour() -> None:
    """Pass 0 of ``decide`` routes past ``context`` (the detour's ``when: iteration >= 1`` is
    false): both engines skipped ``context`` at once beside ``check`` and ran it as pass 1
    for the detour of ``decide``'s next pass; the reference, settling ``check`` first, saw
    ``decide`` reset and ran ``context`` once as pass 0. Now it waits for the loop, and runs
    once, as the detour's target, on every reading."""
    found = agree(load(_detour_from_a_loop_body("", "iteration >= 1")))
    assert found["kahn"].steps["context"][:3] == ("SUCCEEDED", 0, 1)
    assert found["kahn"].steps["after"][3]["terminate"] is True


def test_an_active_detours_target_still_waits_for_a_loop_that_does_not_wait_for_the_return() -> (
    None
):
    """The target reads ``again``, in the body of ``check``'s loop, which does not come after
    the declarer: it waits for that loop's last pass even as the detour's target (the first
    fix of the case above let it run beside ``check``, whose loop then reset ``again`` under
    it, so its ``terminate_when`` saw ``again`` PENDING on Kahn). Found by make fuzz."""
    wf = load(
        [
            probe("s0", optional=True),
            _loop("again", "again", 1),
            {**_loop("check", "again", 1, "again"), "trigger": "all_success"},
            probe(
                "decide",
                config={"value": 0, "terminate_at": 1},
                routing={
                    "kind": "conditional",
                    "conditions": [{"expr": "true", "target": "context"}],
                    "detour": {"target": "context", "when": "true"},
                },
            ),
            probe(
                "context",
                depends_on=["s0", "again", "decide"],
                trigger="all_success",
                routing={"kind": "linear", "terminate_when": "steps.again.status == 'SUCCEEDED'"},
            ),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["decide"][:3] == ("SKIPPED", 1, 1)  # cut off: no return pass
    assert found["kahn"].steps["again"][:3] == ("SUCCEEDED", 3, 4)


def test_a_detour_targets_dependent_reading_the_declarer_waits_for_the_declarers_loop() -> None:
    """``reader`` follows the detour target ``context``, which ran as the active target before
    ``check``'s loop back to ``decide`` ended; nothing made ``reader`` wait for that loop, so it
    read ``decide.outputs.n`` beside it — 1 on Kahn and the reference, 3 on LangGraph (make
    fuzz, after the fixes above; at main too). By "When a step runs": ``check``'s loop runs
    ``decide`` again without ``reader``, and ``check`` does not wait for ``reader``, so
    ``reader`` waits for the loop's last pass and reads ``decide``'s last pass, 3."""
    wf = load(
        [
            probe(
                "decide",
                trigger="all_success",
                routing={
                    "kind": "conditional",
                    "conditions": [{"expr": "true", "target": "context"}],
                    "detour": {"target": "context", "when": "true"},
                },
            ),
            probe("context", depends_on=["decide"]),
            {
                **_loop("reader", "reader", 1, "context"),
                "config": {"value": 0, "fail_times": 1, "fail_from": 0},
                "retries": 1,
                "inputs": {"x": "has(steps.decide.outputs.n) ? steps.decide.outputs.n : -1"},
            },
            _loop("s3", "s3", 1, "decide", "context", "reader"),
            {**_loop("check", "decide", 1, "decide"), "trigger": "all_success"},
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["reader"][3]["x"] == 3  # decide's last pass


def test_a_detour_target_that_is_also_a_loop_router_does_not_wait_on_a_step_waiting_for_it() -> (
    None
):
    """``s4`` is ``s2``'s detour target and routes a loop back to ``s0``; ``s3`` (a dependent
    of ``s2``, router of a second loop to ``s0``) waits for ``s4``'s loop. The cycle check
    ignored that wait as a mere detour return, so ``s4`` waited for ``s3`` too and neither
    ever settled (make fuzz, with the first fix above)."""
    last_x = {"x": "inputs.xs[size(inputs.xs) - 1]"}
    ends = {"value": 0, "terminate_at": 0}
    wf = load(
        [
            probe("s0", config=ends, trigger="all_success", inputs=last_x),
            probe("s1", depends_on=["s0"], interrupt={"before": True, "prompt": "approve?"}),
            probe(
                "s2",
                depends_on=["s1"],
                routing={
                    "kind": "conditional",
                    "conditions": [{"expr": "true", "target": "s3"}],
                    "detour": {"target": "s4", "when": "true"},
                },
            ),
            {**_loop("s3", "s0", 1, "s0", "s1", "s2"), "config": ends},
            {**_loop("s4", "s0", 1, "s0", "s1", "s2"), "config": ends},
            probe("s5", config=ends),
            _loop("s6", "s6", 1, "s0", "s1", "s2", "s3", "s4", "s5"),
        ]
    )
    found = agree(wf)
    assert found["kahn"].status == "COMPLETED"


# -- "When a step runs": the rule read from docs/workflows.md alone (engine-meaning) --------------


def test_a_step_a_detour_target_needs_runs_inside_the_detour_on_the_loops_current_pass() -> None:
    """``y`` reads ``t``, in the body of ``check``'s loop, from outside it: it waits for the
    loop — until ``d``, in the body, sends a detour to ``x``, which needs ``y``. ``check`` then
    waits for the return, so for ``x`` and ``y``: the loop's router already waits for ``y``,
    and ``y`` runs at once, on ``t``'s second pass. Both engines ran ``y`` on ``t``'s first
    pass, beside the loop: their waits did not change while a detour was under way."""
    wf = load(
        [
            probe("t"),
            probe(
                "d",
                depends_on=["t"],
                routing={
                    "kind": "linear",
                    "next": "check",
                    "detour": {"target": "x", "when": "iteration >= 1"},
                },
            ),
            probe("y", depends_on=["t"], inputs={"x": "steps.t.outputs.n"}),
            probe("x", depends_on=["y"]),
            _loop("check", "t", 1, "d"),
        ]
    )
    found = agree(wf)
    runs = {step_id: state[:3] for step_id, state in found["kahn"].steps.items()}
    assert runs == {
        "t": ("SUCCEEDED", 1, 2),
        "d": ("SUCCEEDED", 2, 3),
        "y": ("SUCCEEDED", 0, 1),
        "x": ("SUCCEEDED", 0, 1),
        "check": ("SUCCEEDED", 1, 2),
    }
    assert found["kahn"].steps["y"][3]["x"] == 1  # t's second pass, the one under way


def test_a_step_reading_an_outer_loops_body_waits_for_it_beside_an_overlapping_loop() -> None:
    """``outer`` goes back to ``t``; its body holds ``inner``, the router of a loop to
    ``t_in``, which is not in the outer body. What a pass of ``outer`` runs again is its own
    body and ``inner``'s: ``reader``, reading only ``p`` of the outer body, waits for
    ``outer`` and reads ``p``'s last pass (a reach left with the inner body alone let it run
    on the first)."""
    wf = load(
        [
            probe("t"),
            probe("t_in"),
            _loop("inner", "t_in", 1, "t", "t_in"),
            probe("p", depends_on=["t"]),
            _loop("outer", "t", 1, "inner", "p"),
            probe("reader", depends_on=["p"], inputs={"x": "steps.p.outputs.n"}),
        ]
    )
    found = agree(wf)
    assert found["kahn"].steps["reader"][:3] == ("SUCCEEDED", 0, 1)
    assert found["kahn"].steps["reader"][3]["x"] == 1  # p's last pass
    assert found["kahn"].steps["p"][:3] == ("SUCCEEDED", 1, 2)


def test_a_detour_that_does_not_return_is_a_plain_route_to_its_target() -> None:
    """``returns: false``: the target runs, the declaring step does not run again, and what
    follows the target runs once it has settled (nothing waits for a return pass)."""
    wf = load(
        [
            probe(
                "decide",
                routing={
                    "kind": "linear",
                    "next": "after",
                    "detour": {"target": "context", "returns": False, "when": "true"},
                },
            ),
            probe("context"),
            probe("summary", depends_on=["context"]),
            probe("after"),
        ]
    )
    found = agree(wf)
    runs = {step_id: state[:3] for step_id, state in found["kahn"].steps.items()}
    assert runs == {
        "decide": ("SUCCEEDED", 0, 1),
        "context": ("SUCCEEDED", 0, 1),
        "summary": ("SUCCEEDED", 0, 1),
        "after": ("SKIPPED", 0, 0),
    }


def test_a_step_reading_nothing_a_loop_runs_again_does_not_wait_for_it() -> None:
    """``u`` reads nothing of ``r``'s loop: it starts beside ``t``, in the first wave, so a
    bound of two runs lets it finish; waiting for the loop it would be cut off."""
    wf = load(
        [probe("t"), _loop("r", "t", 2, "t"), probe("u")],
        limits={"max_step_runs": 2},
    )
    found = run_all(wf, INPUTS)
    for name in ("reference", "kahn", "langgraph"):
        assert found[name].status == "PARTIAL", name
        assert found[name].steps["u"][:3] == ("SUCCEEDED", 0, 1), name
        assert found[name].steps["r"][0] == "SKIPPED", name


def test_a_step_gains_a_loop_wait_while_a_detour_is_under_way() -> None:
    """Issue 26's alive mutant (``_build_tables`` 16, fifth session): a step can *gain* a
    loop wait under a detour. ``s2`` and ``s5`` each read the other's loop (both bodies hold
    ``s0`` and ``s1``); ``s2`` comes first, so it waits for ``s5``'s loop and ``s5`` does not
    wait for ``s2``'s. While ``s1``'s detour to ``s2`` is under way ``s1`` waits for ``s2``,
    so ``s5`` (after ``s1``) does too: ``s2`` no longer waits for ``s5``, and ``s5`` takes
    ``s2``'s loop. Shrunk by hypothesis from tests/engine/test_loop_guards.py's drawn shape;
    the engines agree with the reference on it. ``s5`` depends on the declarer, so it is asked
    again when the detour returns anyway; no workflow was found where a step gaining a wait
    is not downstream of the detour's declarer or target (MUTANTS.md, sixth session)."""
    from engine.graph import WorkflowGraph
    from engine.readiness import _build_tables

    steps = [
        probe("s0"),
        probe(
            "s1",
            depends_on=["s0"],
            routing={"kind": "linear", "detour": {"target": "s2", "when": "true"}},
        ),
        _loop("s2", "s0", 2, "s0"),
        probe("s3", depends_on=["s0"]),
        probe("s4", depends_on=["s0"]),
        _loop("s5", "s0", 2, "s1"),
    ]
    wf = load(steps)
    guards = _build_tables(WorkflowGraph(wf)).loop_guards
    assert guards[None] == {"s2": ["s5"], "s3": ["s2", "s5"], "s4": ["s2", "s5"]}
    assert guards[("s1", "s2")] == {"s2": [], "s5": ["s2"]}  # s5 gains s2's loop
    found = agree(wf)
    runs = {step_id: state[:3] for step_id, state in found["kahn"].steps.items()}
    assert runs["s1"] == ("SUCCEEDED", 5, 6)  # the detour taken on each of s2's three passes
    assert runs["s2"] == runs["s5"] == ("SUCCEEDED", 2, 3)


def gaining_a_wait_under_a_detour() -> list[dict[str, Any]]:
    """``s`` gains ``r``'s loop wait while ``s1``'s detour to ``t`` is under way (below)."""
    return [
        probe("s0"),
        probe("w"),
        probe(
            "s1",
            depends_on=["s0"],
            routing={"kind": "linear", "detour": {"target": "t", "when": "true"}},
        ),
        probe("c", depends_on=["s0"]),
        probe("y", depends_on=["c"]),
        probe("t", depends_on=["y"]),
        probe("s", depends_on=["w", "y"]),
        _loop("x", "s0", 2, "s1", "s"),
        _loop("r", "w", 2, "t", "w"),
    ]


def a_loop_router_declaring_a_detour() -> list[dict[str, Any]]:
    """``d`` loops back to ``a`` twice and declares a detour to ``t``, which reads it (below)."""
    return [
        probe("a"),
        probe(
            "d",
            depends_on=["a"],
            routing={
                "kind": "loop",
                "loop": {"target": "a", "max_iterations": 2},
                "detour": {"target": "t", "when": "true"},
            },
        ),
        probe("t", depends_on=["d"]),
        probe("after", depends_on=["t"]),
    ]


def test_a_step_gaining_a_loop_wait_under_a_detour_is_asked_again_when_it_returns() -> None:
    """Issue 26's alive mutant ``_build_tables`` 18 (sixth session): the steps asked again when
    a detour starts or returns must be those whose waits it changes, not every step with a
    wait outside detours. ``s`` depends on neither end of ``s1``'s detour to ``t``, has no
    wait without it (``x``'s loop runs it again; ``r`` waits for ``x`` and so for ``s``), and
    gains ``r``'s loop while the detour is under way: ``t`` then leads to ``x`` through
    ``s1``, so ``t`` no longer waits for ``x``, and nothing leads from ``s`` to ``r``. ``s``'s
    dependencies settle during the detour (``c`` delays ``y`` past ``s1``'s decision); when
    ``t`` settles the wait is gone, and ``s`` must be asked then: ``r`` waits for ``x``, which
    waits for ``s``, so nothing else would (Kahn ended with ``s``, ``x`` and ``r`` unsettled)."""
    from engine.graph import WorkflowGraph
    from engine.readiness import _build_tables

    wf = load(gaining_a_wait_under_a_detour())
    guards = _build_tables(WorkflowGraph(wf)).loop_guards
    assert guards[None] == {"t": ["x"], "r": ["x"]}
    assert guards[("s1", "t")] == {"t": [], "s": ["r"], "x": ["r"], "r": []}  # s gains r
    found = agree(wf)
    assert found["kahn"].status == "COMPLETED"
    runs = {step_id: state[:3] for step_id, state in found["kahn"].steps.items()}
    assert runs["s"] == runs["x"] == runs["r"] == ("SUCCEEDED", 2, 3)


def test_a_loop_router_declaring_a_detour_runs_it_on_each_pass() -> None:
    """A loop's router may declare a detour: here to ``t``, which reads the loop's body and so
    waits for the router's last pass — except while the detour is under way, when the router
    waits for ``t`` (tests/engine/test_loop_guards.py, the same shape). ``t`` runs on each of
    the three passes' detours, ``after`` (reading ``t``) once, after the last."""
    found = agree(load(a_loop_router_declaring_a_detour()))
    runs = {step_id: state[:3] for step_id, state in found["kahn"].steps.items()}
    assert runs["d"] == ("SUCCEEDED", 5, 6)  # each pass, and its return from the detour
    assert runs["t"] == ("SUCCEEDED", 2, 3)
    assert runs["after"] == ("SUCCEEDED", 0, 1)
