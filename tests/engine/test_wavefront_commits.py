"""The Kahn engine commits a settled step's result together with the starts of the steps it
made ready (issue 26): one SQLite transaction per wavefront, counted on a real run store."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from engine import demo_steps  # noqa: F401 - registers demo.echo
from engine.events import StepFinished, StepStarted
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import RunStatus
from engine.store import RunStore


def commits_of(wf: WorkflowDefinition, folder: Path) -> tuple[int, RunStore, str]:
    store = RunStore(folder / "runs.sqlite")
    statements: Counter[str] = Counter()
    store._db.set_trace_callback(lambda sql: statements.update([sql.split()[0].upper()]))
    result = asyncio.run(KahnEngine().execute(wf, RunContext(store=store)))
    assert result.status == RunStatus.COMPLETED
    return statements["COMMIT"], store, result.run_id


def test_a_chain_commits_once_per_step(tmp_path: Path) -> None:
    steps = [StepSpec(id="s0", uses="demo.echo")]
    steps += [
        StepSpec(id=f"s{i}", uses="demo.echo", depends_on=[f"s{i - 1}"]) for i in range(1, 30)
    ]
    commits, store, run_id = commits_of(WorkflowDefinition(name="chain", steps=steps), tmp_path)
    # the run's start and end take a few; each step's result and the next step's start one
    assert commits <= 30 + 5
    events = store.events(run_id)
    assert [e.step_id for e in events if isinstance(e, StepStarted)] == [s.id for s in steps]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_a_fan_out_starts_in_the_root_steps_transaction(tmp_path: Path) -> None:
    leaves = [StepSpec(id=f"leaf{i}", uses="demo.echo", depends_on=["root"]) for i in range(40)]
    wf = WorkflowDefinition(name="fan", steps=[StepSpec(id="root", uses="demo.echo"), *leaves])
    commits, store, run_id = commits_of(wf, tmp_path / "fan")
    # the root's result and the forty starts are one commit; each leaf's result one more
    assert commits <= 1 + 40 + 5
    events = store.events(run_id)
    root_done = next(e.seq for e in events if isinstance(e, StepFinished) and e.step_id == "root")
    starts = [e.seq for e in events if isinstance(e, StepStarted) and e.step_id != "root"]
    assert starts == list(range(root_done + 2, root_done + 42))  # after its budget event
