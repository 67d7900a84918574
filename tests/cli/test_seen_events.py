"""The end of a headless run counts the model answers from what its surface saw, reading back
from the store only the events it did not see (tui/commands/seen_events.py): the count is the
one every stored event gives, whichever part the surface saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import events as ev
from engine.model_answers import tally
from engine.spec import StepSpec, WorkflowDefinition
from engine.store import RunStore
from tui.commands.seen_events import SeenEvents

pytestmark = pytest.mark.timeout(60)


def stored_run(path: Path) -> tuple[RunStore, str, list[ev.RunEvent]]:
    """A SQLite store with one run: four step passes (s0 twice, 1 + 2 + 1 answers from the
    fallback in all), budget events between them; the stored events."""
    wf = WorkflowDefinition(
        name="wf", steps=[StepSpec(id=f"s{number}", uses="demo.echo") for number in range(3)]
    )
    store = RunStore(path)
    run_id = store.create_run(wf, {}, "kahn", "test")
    store.append(
        ev.RunStarted(run_id=run_id, workflow="wf", source="", engine="kahn", engine_reason="")
    )
    passes = [("s0", 0, 1), ("s1", 0, 0), ("s0", 1, 2), ("s2", 0, 1)]
    for number, (step_id, iteration, fallback) in enumerate(passes):
        store.append(
            ev.StepFinished(
                run_id=run_id,
                step_id=step_id,
                iteration=iteration,
                llm_calls=2,
                fallback_calls=fallback,
                duration_s=0.1,
            )
        )
        store.append(
            ev.Budget(
                run_id=run_id,
                step_runs=number,
                llm_calls=0,
                tokens=0,
                max_step_runs=10,
                max_llm_calls=10,
                token_budget=10,
            )
        )
    store.append(ev.RunFinished(run_id=run_id, status=ev.RunStatus.COMPLETED))
    return store, run_id, store.events(run_id)


@pytest.mark.parametrize(
    ("start", "stop"),
    [(0, None), (0, 4), (0, 0), (3, None), (5, 7)],
    ids=["all", "a-prefix", "nothing", "from-a-resume", "a-middle-part"],
)
def test_the_count_is_every_stored_events_whichever_part_the_surface_saw(
    tmp_path: Path, start: int, stop: int | None
) -> None:
    store, run_id, stored = stored_run(tmp_path / "runs.sqlite")
    with store:
        seen = SeenEvents()
        shown = stored[start:stop]
        seen(shown[:2])
        seen(shown[2:])
        counted = tally(seen.step_finished(store, run_id))
        assert counted == tally(stored)
        assert counted.fallback == 4 and counted.fallback_steps == ["s0", "s2"]


def test_a_run_seen_from_its_first_event_reads_back_only_what_came_after(tmp_path: Path) -> None:
    store, run_id, stored = stored_run(tmp_path / "runs.sqlite")
    with store:
        seen = SeenEvents()
        seen(stored)
        assert seen.step_finished(store, run_id) == [
            event for event in stored if isinstance(event, ev.StepFinished)
        ]
