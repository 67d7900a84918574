"""A run's checkpoints (``workbench runs history RUN_ID``).

A LangGraph run has real checkpoints: one after every superstep, in the
checkpoint file, each with the statuses the graph state held then. A Kahn run
persists each step result as it settles, so its "checkpoints" are those
transitions, read from the run store. Both come out as the same entries: what
was settled at that point, and what changed since the previous one — a fork
(``workbench runs fork RUN_ID --at STEP``) starts from the results a run holds,
whichever engine ran it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import Field

from engine.events import StepFailed, StepFinished, StepSkipped
from plumbing.frozen import Frozen

_SETTLED = ("SUCCEEDED", "SKIPPED", "FAILED", "UPSTREAM_FAILED")


class HistoryEntry(Frozen):
    index: int
    """0 is the oldest."""
    checkpoint_id: str
    """The LangGraph checkpoint id, or ``seq:<n>`` for a Kahn run's stored transition."""
    superstep: int | None = None
    source: str
    """LangGraph: input, loop, update or fork; Kahn: the kind of the settling event."""
    created: str
    statuses: dict[str, str] = Field(default_factory=dict)
    changed: dict[str, str] = Field(default_factory=dict)
    """Steps whose status differs from the previous entry."""

    @property
    def settled(self) -> list[str]:
        return [step for step, status in self.statuses.items() if status in _SETTLED]


async def checkpoint_history(saver: BaseCheckpointSaver[Any], run_id: str) -> list[HistoryEntry]:
    """Every checkpoint of a LangGraph run's thread, oldest first."""
    tuples = [item async for item in saver.alist({"configurable": {"thread_id": run_id}})]
    tuples.sort(key=lambda item: item.checkpoint["id"])
    entries: list[HistoryEntry] = []
    previous: dict[str, str] = {}
    for index, item in enumerate(tuples):
        values: dict[str, Any] = item.checkpoint.get("channel_values", {})
        statuses = dict(values.get("statuses") or {})
        metadata = item.metadata or {}
        entries.append(
            HistoryEntry(
                index=index,
                checkpoint_id=item.checkpoint["id"],
                superstep=metadata.get("step"),
                source=str(metadata.get("source", "")),
                created=str(item.checkpoint.get("ts", "")),
                statuses=statuses,
                changed={k: v for k, v in statuses.items() if previous.get(k) != v},
            )
        )
        previous = statuses
    return entries


def store_history(store: Any, run_id: str) -> list[HistoryEntry]:
    """A run's stored step transitions as checkpoints (runs without a checkpoint file)."""
    statuses = {step_id: "PENDING" for step_id in store.get_run(run_id).definition.step_ids}
    entries: list[HistoryEntry] = []
    for event in store.events(run_id):
        if isinstance(event, StepFinished):
            status = "SUCCEEDED"
        elif isinstance(event, StepSkipped):
            status = "SKIPPED"
        elif isinstance(event, StepFailed):
            status = "UPSTREAM_FAILED" if event.upstream else "FAILED"
        else:
            continue
        statuses = {**statuses, event.step_id: status}
        entries.append(
            HistoryEntry(
                index=len(entries),
                checkpoint_id=f"seq:{event.seq}",
                source=event.kind,
                created=datetime.fromtimestamp(event.ts, tz=UTC).isoformat(),
                statuses=statuses,
                changed={event.step_id: status},
            )
        )
    return entries
