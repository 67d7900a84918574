"""kill -9 at every checkpoint write of a LangGraph run, then a resume from the store.

A forked child process runs the workflow on a real SQLite run store and
checkpoint file, and SIGKILLs itself at its N-th checkpoint write (a superstep's
checkpoint or a task's pending writes) — so the run store may be one transition
ahead of the last checkpoint, or the other way round. The parent then resumes
the run with a new engine. Whatever N, the run ends exactly as an uninterrupted
run does (statuses, outputs, route decisions), and no step settles twice in one
iteration: a finished step never runs again, a step that was running starts
again and its journaled calls replay.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised, StepFinished
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow
from engine.protocol import RunContext
from engine.states import RunStatus
from engine.store import RunStore
from tests.engine.langgraph_cases import WORKFLOWS, canonical_of

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


async def approve(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    return InterruptAnswer(action="approve", automatic=True)


def _essentials(canonical: Any) -> tuple[Any, ...]:
    return canonical.status, canonical.outputs, canonical.step_statuses, canonical.routes


def _run_until_killed(workspace: Path, name: str, run_id: str, kill_at: int) -> bool:
    """Run in a forked child that SIGKILLs itself at checkpoint write ``kill_at``; True if it died."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            writes = [0]

            def killing(method: Any) -> Any:
                async def write(self: Any, *args: Any, **kwargs: Any) -> Any:
                    writes[0] += 1
                    if writes[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return await method(self, *args, **kwargs)

                return write

            AsyncSqliteSaver.aput = killing(AsyncSqliteSaver.aput)  # type: ignore[method-assign]
            AsyncSqliteSaver.aput_writes = killing(AsyncSqliteSaver.aput_writes)  # type: ignore[method-assign]
            store = RunStore(workspace / "runs.sqlite")
            wf = load_workflow(WORKFLOWS / f"{name}.yaml")
            asyncio.run(
                LangGraphEngine().execute(
                    wf, RunContext(store=store, run_id=run_id, responder=approve)
                )
            )
            store.close()
            code = 0
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, "the child run failed"
    return False


@pytest.mark.parametrize("name", ["microloop", "detour", "value_branch", "approval"])
def test_kill_9_at_any_checkpoint_write_resumes_to_the_same_end(tmp_path: Path, name: str) -> None:
    wf = load_workflow(WORKFLOWS / f"{name}.yaml")
    with RunStore(tmp_path / "clean" / "runs.sqlite") as clean_store:
        clean = asyncio.run(
            LangGraphEngine().execute(wf, RunContext(store=clean_store, responder=approve))
        )
        expected = _essentials(canonical_of(wf, clean_store, clean.run_id))
    assert clean.status == RunStatus.COMPLETED

    kill_at = 0
    while True:
        kill_at += 1
        workspace = tmp_path / f"kill-{kill_at}"
        run_id = f"{name}-{kill_at}"
        if not _run_until_killed(workspace, name, run_id, kill_at):
            break
        with RunStore(workspace / "runs.sqlite") as store:
            resumed = asyncio.run(
                LangGraphEngine().resume(run_id, RunContext(store=store, responder=approve))
            )
            assert resumed.status == RunStatus.COMPLETED, (kill_at, resumed.reason)
            assert _essentials(canonical_of(wf, store, run_id)) == expected, (
                f"killed at write {kill_at}"
            )
            settled = Counter(
                (e.step_id, e.iteration)
                for e in store.events(run_id)
                if isinstance(e, StepFinished)
            )
            assert max(settled.values()) == 1, (
                f"killed at write {kill_at}: a step finished twice: {settled}"
            )
    assert kill_at > 3, "the run made fewer checkpoint writes than it has supersteps"
