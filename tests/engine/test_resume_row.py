"""The engine state row is rewritten only when more than a step's counters change; the counters
live in the step's ``budget`` event (engine/recorder.py, ``save_counters``). A run resumed at any
settle must still be the run that was going on: checked after every settle, on the shapes whose
row changes mid-run (a loop's pass, a detour under way, a wait gained under a detour), on both
engines against the reference interpreter."""

from __future__ import annotations

from typing import Any

import pytest

from engine.events import Budget
from engine.recorder import RunRecorder
from engine.run_state import RunState
from tests.engine.test_semantics import (
    a_loop_router_declaring_a_detour,
    agree,
    gaining_a_wait_under_a_detour,
    load,
)

SHAPES: dict[str, list[dict[str, Any]]] = {
    "a loop router declaring a detour": a_loop_router_declaring_a_detour(),
    "a wait gained under a detour": gaining_a_wait_under_a_detour(),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_run_restored_after_any_settle_is_the_run_going_on(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[str] = []
    save_counters = RunRecorder.save_counters

    def save_and_restore(recorder: RunRecorder) -> None:
        save_counters(recorder)
        state, store = recorder.state, recorder.store
        last = store.last_event(state.run_id, "budget")
        restored = RunState.restore(
            state.run_id,
            state.wf,
            state.inputs,
            store.step_results(state.run_id),
            store.get_run(state.run_id).engine_state,
            last if isinstance(last, Budget) else None,
        )
        live, again = state.engine_state(), restored.engine_state()
        for measured in ("elapsed_s", "attempts"):  # times, and attempts of steps under way
            live.pop(measured)
            again.pop(measured)
        assert again == live
        compared.append(state.run_id)

    monkeypatch.setattr(RunRecorder, "save_counters", save_and_restore)
    agree(load(SHAPES[shape]))
    assert len(set(compared)) >= 2  # both engines' runs were compared
