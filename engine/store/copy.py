"""Copying runs from one run store to another (``workbench runs copy``): an SQLite workspace
to a PostgreSQL server and back.

A run is copied whole — its record, every event as stored (seq, times and body unchanged),
its step results with every settled iteration, its journal, its interrupts and answers, its
engine state — in one transaction of the target, so a copy that fails leaves nothing of
that run behind. Copying is idempotent and never overwrites: a run the target already holds
as the source has it is left alone (``present``); one the target holds differently — it went
on there, or here, after an earlier copy — is left alone on both sides and reported
(``differs``). Which process drove a RUNNING run is not copied (a process of another
machine means nothing there): such a run reads as stopped in the target, and resumes there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from engine.store.base import BaseRunStore
from engine.store.records import RunRecord, StepResult, UnknownRun
from plumbing.frozen import Frozen

Outcome = Literal["copied", "present", "differs"]
ALL_RUNS = 1_000_000_000
"""The ``limit`` that lists every stored run."""


class CopiedRun(Frozen):
    run_id: str
    outcome: Outcome
    events: int


def copy_runs(
    source: BaseRunStore, target: BaseRunStore, run_ids: Iterable[str] = ()
) -> Iterator[CopiedRun]:
    """Copy ``run_ids`` (every run of ``source`` when empty), oldest first, saying what
    became of each; :class:`UnknownRun` for a named run ``source`` does not hold."""
    wanted = list(run_ids)
    if not wanted:
        wanted = [run.run_id for run in reversed(source.list_runs(limit=ALL_RUNS))]
    for run_id in wanted:
        yield copy_run(source, target, run_id)


def copy_run(source: BaseRunStore, target: BaseRunStore, run_id: str) -> CopiedRun:
    record = source.get_run(run_id)
    events = source.events(run_id)
    try:
        there = target.get_run(run_id)
    except UnknownRun:
        there = None
    if there is not None:
        same = _comparable(there) == _comparable(record) and target.events(run_id) == events
        return CopiedRun(run_id=run_id, outcome="present" if same else "differs", events=0)
    results = source.step_results(run_id)
    journal = source.journal_of(run_id)
    interrupts = source.interrupts(run_id)
    with target.batch():
        target._insert_run(record)
        if record.engine_state:
            target._write_engine_state(run_id, record.engine_state, record.updated_ts)
        for event in events:
            target._write_event(event)
        for result in results.values():
            for settled in result.history:
                target._write_step(
                    run_id,
                    StepResult(
                        step_id=result.step_id,
                        status=settled.status,
                        iteration=settled.iteration,
                        outputs=settled.outputs,
                        reason=settled.reason,
                    ),
                )
            target._write_step(run_id, result.model_copy(update={"history": []}))
        for step_id, iteration, index, entry in journal:
            target._write_journal(run_id, step_id, iteration, index, entry)
        for interrupt in interrupts:
            target._write_interrupt(interrupt)
    return CopiedRun(run_id=run_id, outcome="copied", events=len(events))


def _comparable(record: RunRecord) -> dict[str, object]:
    """What a copy keeps of a run (not who drives it, which is per machine)."""
    return record.model_dump(exclude={"owner", "owner_status"})
