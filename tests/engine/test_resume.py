"""Resume (after SIGKILL and from WAITING) and fork, on the real SQLite store."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.context import InterruptAnswer
from engine.kahn import KahnEngine, RunNotResumable
from engine.protocol import RunContext
from engine.states import RunStatus, StepStatus
from engine.store import RunStore
from tests.engine import crash_worker, resume_worker
from tests.engine.kahn_helpers import TEST_REGISTRY, run, step, workflow

REPO = Path(__file__).resolve().parents[2]


def _wait_for(
    condition: Callable[[], bool], what: str, process: subprocess.Popen[bytes], limit_s: float = 120
) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if process.poll() is not None:
            raise AssertionError(
                f"the worker exited ({process.returncode}) before {what}: "
                f"{process.stderr.read().decode() if process.stderr else ''}"
            )
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


async def test_resume_after_sigkill_reruns_nothing_finished_and_repeats_no_call(
    tmp_path: Path,
) -> None:
    db, counter, run_id = tmp_path / "runs.sqlite", tmp_path / "calls.txt", "crash-run"
    counter.touch()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_worker", str(db), run_id, str(counter)],
        cwd=REPO,
        env={**os.environ, "CRASH_BLOCK": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    reader = None

    def killed_mid_run() -> bool:
        nonlocal reader
        if not db.exists() or "slow" not in counter.read_text().split():
            return False
        reader = reader or RunStore(db)
        # the counter line is written inside the call, its journal entry only after it returns
        return reader.journal_get(run_id, "slow", 0, 0) is not None and any(
            e.kind == "step_finished" and e.step_id == "quick" for e in reader.events(run_id)
        )

    try:
        _wait_for(killed_mid_run, "slow's journaled call and quick's finish", process)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    assert reader is not None
    before = reader.events(run_id)
    reader.close()
    assert [e.seq for e in before] == list(range(1, len(before) + 1))

    store = RunStore(db)
    assert store.get_run(run_id).status == RunStatus.RUNNING
    result = await KahnEngine(registry=TEST_REGISTRY).resume(
        run_id, crash_worker.context(store, run_id, str(counter))
    )
    events = store.events(run_id)
    counted = store.get_run(run_id).engine_state["step_runs"]
    store.close()

    assert result.status == RunStatus.COMPLETED
    assert counted == sum(e.kind == "step_started" for e in events), (
        "every start counted: the ones before the kill from the last budget event"
    )
    assert sorted(counter.read_text().split()) == ["first", "last", "quick", "slow"], (
        "no journaled call repeated"
    )
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "no event lost or duplicated"
    assert [e.model_dump() for e in events[: len(before)]] == [e.model_dump() for e in before]
    after = events[len(before) :]
    assert after[0].kind == "run_started" and after[0].resumed
    rerun = [e.step_id for e in after if e.kind == "step_started"]
    assert rerun == ["slow", "last"], "finished steps are not run again"
    slow_finished = next(e for e in after if e.kind == "step_finished" and e.step_id == "slow")
    assert slow_finished.replayed_calls == 1


async def test_an_unanswered_interrupt_leaves_the_run_waiting_and_resume_answers_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.sqlite"
    wf = workflow(
        step(
            "plan",
            interrupt={"after": True, "prompt": "Approve the plan?"},
            config={"set": {"n": 1}},
        ),
        step("side"),
        step("execute", depends_on=["plan", "side"]),
    )
    store = RunStore(db)
    waiting, _ = await run(wf, store=store)
    assert waiting.status == RunStatus.WAITING
    assert waiting.step_statuses == {
        "plan": StepStatus.WAITING_HUMAN,
        "side": StepStatus.SUCCEEDED,
        "execute": StepStatus.PENDING,
    }
    assert len(waiting.pending_interrupts) == 1
    store.close()

    other_process_store = RunStore(db)
    other_process_store.record_answer(
        waiting.pending_interrupts[0], InterruptAnswer(action="edit", value={"n": 2}, note="two")
    )
    other_process_store.close()

    store = RunStore(db)
    resumed = await KahnEngine(registry=TEST_REGISTRY).resume(
        waiting.run_id, RunContext(store=store)
    )
    events = store.events(waiting.run_id)
    assert resumed.status == RunStatus.COMPLETED
    assert store.step_results(waiting.run_id)["plan"].outputs == {"n": 2}
    assert [e.kind for e in events].count("interrupt_raised") == 1
    assert [e.kind for e in events].count("interrupt_resolved") == 1
    side_starts = [e for e in events if e.kind == "step_started" and e.step_id == "side"]
    assert len(side_starts) == 1
    with pytest.raises(RunNotResumable):
        await KahnEngine(registry=TEST_REGISTRY).resume(waiting.run_id, RunContext(store=store))
    store.close()


async def test_a_rejected_approval_fails_the_step() -> None:
    wf = workflow(step("plan", interrupt={"after": True}), step("execute", depends_on=["plan"]))
    result, events = await run(
        wf, answers={"plan": InterruptAnswer(action="reject", note="too risky")}
    )
    assert result.status == RunStatus.FAILED
    assert result.step_statuses["execute"] == StepStatus.UPSTREAM_FAILED
    failed = next(e for e in events if e.kind == "step_failed" and e.step_id == "plan")
    assert failed.error == "outputs rejected (too risky)"


async def test_fork_keeps_results_upstream_and_reruns_from_the_step(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    wf = workflow(
        step("a"),
        step("b", depends_on=["a"]),
        step("side", depends_on=["a"]),
        step("c", depends_on=["b"]),
        step("d", depends_on=["c", "side"]),
    )
    parent, _ = await run(wf, store=store)
    fork = await KahnEngine(registry=TEST_REGISTRY).fork(
        parent.run_id, "c", RunContext(store=store)
    )
    events = store.events(fork.run_id)
    assert fork.status == RunStatus.COMPLETED
    assert [e.step_id for e in events if e.kind == "step_started"] == ["c", "d"]
    assert events[0].kind == "run_started" and events[0].forked_from == parent.run_id
    record = store.get_run(fork.run_id)
    assert (record.parent_run_id, record.forked_at) == (parent.run_id, "c")
    assert store.step_results(fork.run_id)["b"].status == StepStatus.SUCCEEDED
    store.close()


@pytest.mark.parametrize("round_", range(3))
async def test_two_processes_resuming_a_waiting_run_with_different_answers_never_mix_them(
    tmp_path: Path, round_: int
) -> None:
    """Claiming the run and recording its answer are one transaction: whichever process
    claims first has its answer applied; the other is refused and stores nothing."""
    db = tmp_path / "runs.sqlite"
    wf = workflow(step("plan", interrupt={"after": True}), step("execute", depends_on=["plan"]))
    with RunStore(db) as store:
        waiting, _ = await run(wf, store=store)
    assert waiting.status == RunStatus.WAITING
    (interrupt_id,) = waiting.pending_interrupts

    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    processes = [
        context.Process(
            target=resume_worker.resume_with,
            args=(db, waiting.run_id, interrupt_id, action, barrier, results),
        )
        for action in ("approve", "reject")
    ]
    for process in processes:
        process.start()
    outcomes = {results.get(timeout=120)[:2] for _ in processes}
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0

    resumed = [action for action, outcome in outcomes if outcome == "resumed"]
    assert len(resumed) == 1, outcomes
    with RunStore(db) as store:
        stored = store.get_interrupt(interrupt_id)
        assert stored is not None and stored.answer is not None
        assert stored.answer.action == resumed[0]
        answers = [
            e.answer["action"]
            for e in store.events(waiting.run_id)
            if e.kind == "interrupt_resolved"
        ]
        assert answers == resumed
        plan = store.step_results(waiting.run_id)["plan"].status
        assert plan == (StepStatus.SUCCEEDED if resumed[0] == "approve" else StepStatus.FAILED)
