"""Who drives a RUNNING run: recorded in the store, checked on read, enforced on resume.

Real components throughout: the SQLite store, the Kahn engine, a worker process
killed with SIGKILL, and the `workbench` CLI in subprocesses.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.context import StepContext
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.services import ServiceRegistry
from engine.states import RunStatus
from engine.steps import AnyInput, AnyOutput
from engine.store import RunOwned, RunOwner, RunStore, owner_status, this_process
from tests.cli.test_engine_cli import workbench
from tests.engine import crash_worker
from tests.engine.kahn_helpers import TEST_REGISTRY, step, workflow
from tests.engine.test_resume import _wait_for

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Hold:
    """A service for the held step: it waits until the test sets ``release``."""

    release: asyncio.Event


async def held(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """Waits until the test sets the event it was given."""
    hold = ctx.services.app.get(Hold)
    assert hold is not None
    await hold.release.wait()
    return AnyOutput(done=True)


if "test.held" not in TEST_REGISTRY:
    TEST_REGISTRY.register("test.held", held)


def test_a_killed_process_leaves_a_stopped_run_the_cli_shows_and_a_resume_clears(
    tmp_path: Path,
) -> None:
    db, counter, run_id = tmp_path / "runs.sqlite", tmp_path / "calls.txt", "killed-run"
    counter.touch()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_worker", str(db), run_id, str(counter)],
        cwd=REPO,
        env={**os.environ, "CRASH_BLOCK": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    reader: RunStore | None = None

    def blocked_in_slow() -> bool:
        nonlocal reader
        if not db.exists() or "slow" not in counter.read_text().split():
            return False
        reader = reader or RunStore(db)
        return True

    try:
        _wait_for(blocked_in_slow, "slow's journaled call", process)
        assert reader is not None
        live = reader.get_run(run_id)
        assert (live.status, live.owner_status) == (RunStatus.RUNNING, "alive")
        assert live.owner is not None and live.owner.pid == process.pid
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()

    gone = reader.get_run(run_id)
    assert gone.status == RunStatus.RUNNING and gone.owner_status == "gone" and gone.stopped
    assert [run.stopped for run in reader.list_runs()] == [True]
    reader.close()

    listed = workbench(tmp_path, "runs", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"RUNNING (stopped: process gone — workbench resume {run_id})" in listed.stdout
    shown = workbench(tmp_path, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert f"stopped: the process that ran it is gone (pid {process.pid}" in shown.stdout
    assert f"workbench resume {run_id}" in shown.stdout

    store = RunStore(db)
    result = asyncio.run(
        KahnEngine(registry=TEST_REGISTRY).resume(
            run_id, crash_worker.context(store, run_id, str(counter))
        )
    )
    record = store.get_run(run_id)
    store.close()
    assert result.status == RunStatus.COMPLETED
    assert (record.owner, record.owner_status, record.stopped) == (None, "", False)


async def test_a_live_owner_refuses_a_resume_from_another_process_and_finishing_clears_it(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    release = asyncio.Event()
    wf = workflow(step("first"), step("hold", "test.held", depends_on=["first"]), name="held_flow")
    engine = KahnEngine(registry=TEST_REGISTRY)
    context = RunContext(store=store, run_id="live-run", services=ServiceRegistry(Hold(release)))
    task = asyncio.create_task(engine.execute(wf, context))
    for _ in range(10_000):  # until the engine has started the held step
        if any(e.kind == "step_started" and e.step_id == "hold" for e in store.events("live-run")):
            break
        await asyncio.sleep(0.005)
    else:
        raise AssertionError("the held step never started")

    record = store.get_run("live-run")
    assert record.owner == this_process().model_copy(update={"claimed_ts": record.owner.claimed_ts})
    assert (record.owner_status, record.stopped) == ("alive", False)

    refused = await asyncio.to_thread(
        workbench, tmp_path, "resume", "live-run", "--answer", "approve"
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"error: run live-run is running in another process (pid {os.getpid()} on {record.owner.host}); "
        "not resuming it twice"
    ]
    assert "Traceback" not in refused.stderr
    listed = await asyncio.to_thread(workbench, tmp_path, "runs", "list")
    assert "stopped" not in listed.stdout and "RUNNING" in listed.stdout
    with pytest.raises(RunOwned, match="already running in this process"):
        await KahnEngine(registry=TEST_REGISTRY).resume("live-run", context)

    release.set()
    result = await task
    finished = store.get_run("live-run")
    store.close()
    assert result.status == RunStatus.COMPLETED
    assert (finished.owner, finished.owner_status) == (None, "")


async def test_a_waiting_run_has_no_owner_and_resumes(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    wf = workflow(step("ask", interrupt={"after": True, "prompt": "Go?"}), name="ask_flow")
    result = await KahnEngine(registry=TEST_REGISTRY).execute(
        wf, RunContext(store=store, run_id="wait-run")
    )
    record = store.get_run("wait-run")
    store.close()
    assert result.status == RunStatus.WAITING
    assert (record.owner, record.owner_status, record.status_label()) == (None, "", "WAITING")


def test_a_store_written_before_owners_opens_and_its_running_runs_read_as_stopped(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.sqlite"
    store = RunStore(db)
    store.create_run(workflow(step("a")), {}, "kahn", "test", run_id="old-run")
    store.close()
    with sqlite3.connect(db) as old:  # the schema before this change had no run_owners table
        old.execute("DROP TABLE run_owners")
    store = RunStore(db)
    record = store.get_run("old-run")
    assert (record.owner, record.owner_status, record.stopped) == (None, "gone", True)
    store.claim_owner("old-run")
    assert store.get_run("old-run").owner_status == "alive"
    store.set_status("old-run", RunStatus.FAILED, "gave up")
    assert store.get_run("old-run").owner is None
    store.close()


def test_owner_status_tells_a_reused_pid_and_another_host_from_a_live_owner() -> None:
    me = this_process()
    assert owner_status(me) == "alive"
    assert owner_status(me.model_copy(update={"token": "another-process"})) == "gone"
    assert owner_status(me.model_copy(update={"host": me.host + "-elsewhere"})) == "unknown"
    parent = RunOwner(host=me.host, pid=os.getppid(), token="t")
    assert owner_status(parent) == "alive"
    if me.proc_start is not None:  # Linux: the pid's start time is recorded and compared
        assert owner_status(parent.model_copy(update={"proc_start": "1"})) == "gone"
