"""Time travel, as the CLI's ``runs fork`` and the app's fork from a replayed step both do it:
check the fork first (the engine's ``fork_state``, which says what to do when it cannot be
made), then run it through the one launcher (:func:`tui.launch.run.open_run`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.protocol import ForkEdits
from engine.steps import REGISTRY
from engine.store import BaseRunStore, RunRecord, new_run_id
from engine.time_travel import ForkPoint, fork_state
from tui.launch.steps import register_steps
from tui.launch.workspace import Workspace


@dataclass(frozen=True)
class ForkPlan:
    """A fork that can be made: the run it leaves, where, with what changed, and its new id."""

    source: RunRecord
    point: ForkPoint
    edits: ForkEdits
    run_id: str
    inputs: dict[str, Any]
    """The fork's run inputs: the source's with the edits'."""

    @property
    def reason(self) -> str:
        return f"fork of {self.source.run_id} at {self.point}"


def plan_fork(
    store: BaseRunStore,
    workspace: Workspace,
    source_run_id: str,
    at_step: str,
    edits: ForkEdits | None = None,
    run_id: str | None = None,
) -> ForkPlan:
    """Check a fork of ``source_run_id`` at ``at_step`` (``STEP[@ITERATION]``) with ``edits``.

    Raises :class:`engine.time_travel.ForkError` (what to do instead) or
    :class:`engine.store.UnknownRun`."""
    register_steps(workspace)
    record = store.get_run(source_run_id)
    point = ForkPoint.parse(at_step)
    edits = edits or ForkEdits()
    state = fork_state(store, source_run_id, point, edits, REGISTRY, run_id or new_run_id())
    return ForkPlan(record, point, edits, state.run_id, dict(state.inputs))
