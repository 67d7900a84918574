"""A run's state rebuilt from the store (``RunState.restore``): every counter and mark a resume
needs comes back as it was saved, a store written before a key existed reads as its default,
and a stored step the definition no longer has is passed over."""

from __future__ import annotations

from typing import Any

from engine.events import Budget
from engine.recorder import RunRecorder
from engine.run_state import RunState
from engine.states import StepStatus
from engine.store import InMemoryRunStore, StepIteration, StepResult
from engine.trusted import json_bytes
from tests.engine.kahn_helpers import step, workflow

WF = workflow(step("a"), step("b", depends_on=["a"]), step("c", depends_on=["b"]), step("d"))

SAVED: dict[str, Any] = {
    "step_runs": 7,
    "llm_calls": 3,
    "tokens": 120,
    "cost_usd": 0.25,
    "elapsed_s": 12.5,
    "loop_counts": {"c": 2},
    "returned_detours": ["b"],
    "terminated_by": "a",
    "stopped": {"d": "terminated by a"},
    "attempts": {"b": 3},
    "active_detour": {"declared_by": "a", "target": "c"},
}


def results() -> dict[str, StepResult]:
    return {
        "gone": StepResult(step_id="gone", status=StepStatus.SUCCEEDED, runs=9),
        "a": StepResult(
            step_id="a",
            status=StepStatus.SUCCEEDED,
            iteration=1,
            outputs={"x": 1},
            routed_by=["r1"],
            not_routed_by=["r2"],
            runs=2,
            history=[
                StepIteration(iteration=0, status=StepStatus.SUCCEEDED, outputs={"x": 0}),
                StepIteration(iteration=1, status=StepStatus.SUCCEEDED, outputs={"x": 1}),
            ],
        ),
        "b": StepResult(step_id="b", status=StepStatus.WAITING_HUMAN, runs=1),
        "c": StepResult(step_id="c", status=StepStatus.RUNNING, runs=1),
    }


def test_a_restored_run_has_every_counter_and_mark_it_was_saved_with() -> None:
    state = RunState.restore("r", WF, {"q": 1}, results(), SAVED)
    assert (state.step_runs, state.budget.llm_calls, state.budget.tokens) == (7, 3, 120)
    assert (state.budget.cost_usd, state.elapsed_before) == (0.25, 12.5)
    assert state.loop_counts == {"c": 2}
    assert state.returned_detours == {"b"}
    assert (state.terminated_by, state.stopped) == ("a", {"d": "terminated by a"})
    assert state.active_detour is not None
    assert (state.active_detour.declared_by, state.active_detour.target) == ("a", "c")
    a, b, c, d = (state.steps[s] for s in "abcd")
    assert (a.status, a.iteration, a.outputs, a.runs) == (StepStatus.SUCCEEDED, 1, {"x": 1}, 2)
    assert (set(a.routed_by), set(a.not_routed_by)) == ({"r1"}, {"r2"})
    assert [h.outputs for h in a.earlier] == [{"x": 0}]  # the current pass is not an earlier one
    assert (b.status, b.attempt, c.status, c.attempt) == (
        StepStatus.PENDING,
        3,
        StepStatus.PENDING,
        1,
    )
    assert state.answering == {"b"}  # waiting for an answer: its start is counted already
    assert (d.status, d.runs) == (StepStatus.PENDING, 0)
    assert "gone" not in state.steps


def test_a_store_saved_before_a_key_existed_reads_as_its_defaults() -> None:
    state = RunState.restore("r", WF, {}, {"b": results()["b"]}, {})
    assert (state.step_runs, state.budget.llm_calls, state.budget.tokens) == (0, 0, 0)
    assert (state.budget.cost_usd, state.elapsed_before) == (0.0, 0.0)
    assert (state.loop_counts, state.returned_detours, state.stopped) == ({}, set(), {})
    assert (state.terminated_by, state.active_detour) == ("", None)
    assert state.steps["b"].attempt == 1


def _budget(**counters: Any) -> Budget:
    values = {"step_runs": 0, "llm_calls": 0, "tokens": 0, "elapsed_s": 0.0, "cost_usd": 0.0}
    return Budget(
        run_id="r", max_step_runs=99, max_llm_calls=9, token_budget=999, **(values | counters)
    )


def test_each_counter_is_restored_from_whichever_of_state_and_last_budget_is_later() -> None:
    """A settled step's counters are in its ``budget`` event; the engine state row is written
    only when what no budget carries changes — either may be the later, counter by counter."""
    later = _budget(step_runs=9, llm_calls=2, tokens=150, elapsed_s=12.0, cost_usd=0.5)
    state = RunState.restore("r", WF, {}, results(), SAVED, later)
    assert (state.step_runs, state.budget.llm_calls, state.budget.tokens) == (9, 3, 150)
    assert (state.budget.cost_usd, state.elapsed_before) == (0.5, 12.5)
    assert (state.loop_counts, state.terminated_by) == ({"c": 2}, "a")  # never in a budget
    only = RunState.restore("r", WF, {}, {}, {}, later)
    assert (only.step_runs, only.budget.llm_calls, only.budget.tokens) == (9, 2, 150)
    assert (only.budget.cost_usd, only.elapsed_before) == (0.5, 12.0)


class _CountingStore(InMemoryRunStore):
    def __init__(self) -> None:
        super().__init__()
        self.states: list[dict[str, Any]] = []

    def _write_engine_state(self, run_id: str, state: dict[str, Any], updated_ts: float) -> None:
        self.states.append(state)
        super()._write_engine_state(run_id, state, updated_ts)


def test_a_step_that_changes_only_the_counters_stores_them_in_its_budget_event_alone() -> None:
    store = _CountingStore()
    state = RunState.fresh("r", WF, {})
    store.create_run(WF, {}, "kahn", "test", run_id="r")
    recorder = RunRecorder(state, store)
    for runs in (1, 2, 3):
        state.step_runs = runs
        recorder.save_counters()
    assert [s["step_runs"] for s in store.states] == [1], "the first is stored, then none"
    state.step_runs = 4
    state.loop_counts["c"] = 1
    recorder.save_counters()
    state.step_runs = 5
    recorder.save_counters()
    state.loop_counts.clear()
    state.step_runs = 6
    recorder.save_counters()
    assert [(s["step_runs"], s["loop_counts"]) for s in store.states] == [
        (1, {}),
        (4, {"c": 1}),
        (6, {}),
    ]
    budgets = [e for e in store.events("r") if isinstance(e, Budget)]
    assert [b.step_runs for b in budgets] == [1, 2, 3, 4, 5, 6]
    restored = RunState.restore("r", WF, {}, {}, store.get_run("r").engine_state, budgets[-1])
    assert restored.step_runs == 6
    recorder.save_engine_state()  # a pause or the end: always stored
    assert store.states[-1] == state.engine_state() | {"elapsed_s": store.states[-1]["elapsed_s"]}
    assert store.states[-1]["loop_counts"] is not store.states[0]["loop_counts"]


def test_what_a_restored_run_saves_again_is_what_it_was_restored_from() -> None:
    state = RunState.restore("r", WF, {}, results(), SAVED)
    again = state.engine_state()
    for key in ("step_runs", "llm_calls", "tokens", "cost_usd", "loop_counts", "terminated_by"):
        assert again[key] == SAVED[key], key
    assert again["returned_detours"] == SAVED["returned_detours"]
    assert again["stopped"] == SAVED["stopped"]
    assert again["active_detour"] == SAVED["active_detour"]
    assert again["elapsed_s"] >= SAVED["elapsed_s"]


# -- a step record's own changes (the mutants MUTANTS.md listed for run_state.py) -------------


def test_a_reset_step_is_pending_in_its_next_iteration_with_no_reason() -> None:
    record = RunState.fresh("r", WF, {}).steps["a"]
    record.settle(StepStatus.FAILED, reason="boom")
    record.reset()
    assert (record.status, record.iteration, record.reason) == (StepStatus.PENDING, 1, "")
    assert record.result().reason == ""  # the PENDING row stored until the step starts again
    assert [(h.iteration, h.status, h.reason) for h in record.earlier] == [
        (0, StepStatus.FAILED, "boom")
    ]


def test_a_reset_drops_only_the_routing_marks_of_the_routers_reset_with_the_step() -> None:
    record = RunState.fresh("r", WF, {}).steps["c"]
    record.routed_by = frozenset({"r1", "r2"})
    record.not_routed_by = frozenset({"r1", "r3"})
    record.reset(routers_reset={"r1"})
    assert set(record.routed_by) == {"r2"}  # r2 stays settled: its choice still holds
    assert set(record.not_routed_by) == {"r3"}
    stored = record.result()
    assert (stored.routed_by, stored.not_routed_by) == (["r2"], ["r3"])


def test_a_stored_result_carries_the_steps_routing_marks_sorted() -> None:
    record = RunState.fresh("r", WF, {}).steps["b"]
    record.routed_by = frozenset({"z", "a"})
    record.not_routed_by = frozenset({"y", "b"})
    stored = record.result()
    assert (stored.routed_by, stored.not_routed_by) == (["a", "z"], ["b", "y"])


def test_settling_succeeded_without_new_outputs_keeps_the_outputs_and_any_other_end_hides_them() -> (
    None
):
    record = RunState.fresh("r", WF, {}).steps["a"]
    record.settle(StepStatus.SUCCEEDED, outputs={"x": 1})
    record.settle(StepStatus.SUCCEEDED)
    assert record.outputs == {"x": 1}
    for status in (StepStatus.SKIPPED, StepStatus.FAILED, StepStatus.UPSTREAM_FAILED):
        record.settle(StepStatus.SUCCEEDED, outputs={"x": 2})
        record.settle(status, reason="later")
        assert record.outputs == {}, status


def test_a_step_that_stops_waiting_leaves_the_attempts_resume_needs() -> None:
    state = RunState.fresh("r", WF, {})
    record = state.steps["b"]
    record.status, record.attempt = StepStatus.WAITING_HUMAN, 3
    record.changed()
    assert state.engine_state()["attempts"] == {"b": 3}
    record.status = StepStatus.RUNNING  # answered: it runs on in the attempt it asked in
    record.changed()
    assert state.engine_state()["attempts"] == {}


def test_expressions_read_each_steps_iteration_as_it_stands() -> None:
    from engine.conditions import compile_expr

    state = RunState.fresh("r", WF, {})
    record = state.steps["a"]
    record.settle(StepStatus.SUCCEEDED, outputs={})
    read = compile_expr("steps.a.iteration")
    assert read.evaluate(state.activation()) == 0
    record.reset()
    record.settle(StepStatus.SUCCEEDED, outputs={})
    record.reset()
    assert read.evaluate(state.activation()) == 2


def test_a_steps_own_row_is_the_validated_one() -> None:
    """``own_row`` (the RUNNING and SUCCEEDED rows, built without validating again) holds
    what ``result`` holds, field for field, routing marks sorted, and nothing it does not; its
    JSON from the fields is the validated model's, byte for byte."""
    state = RunState.fresh("r", WF, {})
    record = state.steps["b"]
    assert record.own_row().model() == record.result()
    assert record.own_row().json() == json_bytes(record.result())
    record.iteration, record.runs, record.reason = 2, 3, 'why \u00e9\n"q"'
    record.routed_by, record.not_routed_by = frozenset({"z", "a"}), frozenset({"y", "b"})
    for status in StepStatus:
        record.settle(status, outputs={"x": [1, "two", 1.5e300, float("inf")], "é": None})
        row, validated = record.own_row(), record.result()
        own = row.model()
        assert own == validated
        assert type(own.status) is StepStatus and row.status is status
        assert own.model_dump() == validated.model_dump()
        assert own.model_fields_set == validated.model_fields_set
        assert own.model_dump_json().encode() == row.json() == json_bytes(validated)
        assert (own.routed_by, own.not_routed_by, own.history) == (["a", "z"], ["b", "y"], [])


def test_a_new_runs_first_rows_are_every_step_pending() -> None:
    store = InMemoryRunStore()
    run_id = store.create_run(WF, {}, "kahn", "test")
    state = RunState.fresh(run_id, WF, {})
    recorder = RunRecorder(state, store)
    recorder.save_new([])  # no step: nothing stored, nothing raised
    assert store.step_results(run_id) == {}
    recorder.save_new(state.steps.values())
    rows = store.step_results(run_id)
    assert list(rows) == ["a", "b", "c", "d"]
    assert rows == {s: StepResult(step_id=s, status=StepStatus.PENDING) for s in rows}
