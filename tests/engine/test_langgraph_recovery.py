"""A crash at every checkpoint write of a LangGraph run, then a resume from the store.

The checkpointer raises at its N-th write (a checkpoint or a task's pending
writes) — the process "dies" there, with the run store possibly one transition
ahead of the checkpoint. A new engine resumes the run; whatever N, the run ends
as an uninterrupted one does, and no step settles twice in one iteration (a
finished step never runs again; a step that was running starts again and its
journaled calls replay).
"""
from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised, StepFinished
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow
from engine.protocol import RunContext
from engine.states import RunStatus
from engine.store import InMemoryRunStore
from tests.engine.langgraph_cases import WORKFLOWS, canonical_of


class SimulatedCrash(BaseException):
    """The process dies here (a BaseException, so nothing on the way catches it)."""


class CrashingSaver(InMemorySaver):
    def __init__(self, crash_at: int) -> None:
        super().__init__()
        self.crash_at = crash_at
        self.write_count = 0

    def _tick(self) -> None:
        self.write_count += 1
        if self.write_count == self.crash_at:
            raise SimulatedCrash(f"checkpoint write {self.write_count}")

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        self._tick()
        return await super().aput(*args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> Any:
        self._tick()
        return await super().aput_writes(*args, **kwargs)


async def approve(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    return InterruptAnswer(action="approve", automatic=True)


def _essentials(canonical: Any) -> tuple[Any, ...]:
    return canonical.status, canonical.outputs, canonical.step_statuses, canonical.routes


@pytest.mark.parametrize("name", ["microloop", "detour", "fan_out", "value_branch", "approval"])
def test_a_crash_at_any_checkpoint_write_resumes_to_the_same_end(name: str) -> None:
    wf = load_workflow(WORKFLOWS / f"{name}.yaml")
    clean_store = InMemoryRunStore()
    clean_saver = CrashingSaver(crash_at=0)
    clean = asyncio.run(LangGraphEngine(saver=clean_saver).execute(wf, RunContext(store=clean_store, responder=approve)))
    assert clean.status == RunStatus.COMPLETED
    expected = _essentials(canonical_of(wf, clean_store, clean.run_id))
    total = clean_saver.write_count
    assert total >= 3

    for crash_at in range(1, total + 1):
        store = InMemoryRunStore()
        saver = CrashingSaver(crash_at)
        with pytest.raises(SimulatedCrash):
            asyncio.run(LangGraphEngine(saver=saver).execute(wf, RunContext(store=store, responder=approve,
                                                                             run_id=f"crash-{crash_at}")))
        saver.crash_at = 0
        resumed = asyncio.run(LangGraphEngine(saver=saver).resume(f"crash-{crash_at}",
                                                                  RunContext(store=store, responder=approve)))
        assert resumed.status == RunStatus.COMPLETED, (crash_at, resumed.reason)
        assert _essentials(canonical_of(wf, store, resumed.run_id)) == expected, f"crash at write {crash_at}"
        settled = Counter((e.step_id, e.iteration) for e in store.events(resumed.run_id) if isinstance(e, StepFinished))
        assert max(settled.values()) == 1, f"crash at write {crash_at}: a step finished twice: {settled}"
