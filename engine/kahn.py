"""The Kahn engine: an asyncio wavefront scheduler (ADR-001, DESIGN §5).

A step starts the moment its last dependency settles — the scheduler looks only
at the dependents of the step that just settled (Kahn's algorithm), and never
waits for unrelated steps. Running a step is engine/runner.py's and the run's
life (start, resume, fork, cancel, the final status) is engine/lifecycle.py's,
both shared with the LangGraph engine; this module only decides when.

A step's dependents are started by the step's own task, in the store
transaction that commits its result — not by a central loop that the finished
task would first have to wake through a queue, which costs two more trips
through the event loop per step on the critical path. The transaction holds the
step's result, the ``step_started`` of every step it made ready and the steps it
settled without running (skipped, failed upstream): a wavefront is one commit.
Nothing acts on the result before that commit (a started step's implementation
runs in its own task, later), so a crash loses the result and the starts
together, and a resume runs the step again with its journaled calls replayed.
Steps that become ready together start in topological order (declaration order
breaks ties), so the per-step events and results of a run are the same on every
run of the same definition and inputs.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Iterable

from engine.interrupts import WaitingForHuman
from engine.lifecycle import CancelRequest, EngineBase, RunNotResumable, ScheduleEnd
from engine.protocol import EngineCapabilities
from engine.runner import BegunStep, StepRunner
from engine.states import StepStatus

__all__ = ["KahnEngine", "RunNotResumable"]


class KahnEngine(EngineBase):
    name = "kahn"
    capabilities = EngineCapabilities(
        cycles=True, interrupts_hold_superstep=False, checkpoints=False, fork=True
    )

    async def schedule(self, runner: StepRunner, cancel: CancelRequest) -> ScheduleEnd:
        return await _Wavefront(runner, cancel).drive()


class _Wavefront:
    """The scheduling state of one run: the step tasks in flight and the steps waiting."""

    def __init__(self, runner: StepRunner, cancel: CancelRequest) -> None:
        self.runner = runner
        self.state = runner.state
        self.cancel = cancel
        self.running: dict[str, asyncio.Task[None]] = {}
        self.waiting: set[str] = set()
        self.failure: Exception | None = None
        """An error no step explains (a store failure, a bug): the run cannot go on."""
        self.wake = asyncio.Event()
        """Set when nothing runs any more, the run stops, or a step task failed."""
        self.timed_out = False
        self.create_task = asyncio.get_running_loop().create_task
        """The running loop's (the engine's schedule() makes this in it): a task a step."""
        cancel.on_request(self.wake.set)

    def halted(self) -> bool:
        """Nothing more starts: a limit was reached or the run is cancelled. (A termination
        only cuts off what the terminating step leads to; readiness skips those steps.)"""
        return bool(self.state.limit_reason) or self.cancel.requested

    async def drive(self) -> ScheduleEnd:
        state = self.state
        timer = asyncio.create_task(self.time_out(), name="run-timeout")
        try:
            # a step with a dependency still to settle waits: the steps that settle start it
            rules = self.runner.rules
            self.consider(s for s in state.steps if not rules.blocked(s))
            # A limit starts nothing more, and lets the steps already running finish (they
            # started within it); a cancel or the timeout cuts them off.
            while (
                self.failure is None
                and self.running
                and not self.cancel.requested
                and not self.timed_out
            ):
                self.wake.clear()
                await self.wake.wait()
        except asyncio.CancelledError:
            await self.stop("cancelled")
            raise
        finally:
            timer.cancel()
        if self.failure is not None:
            for task in self.running.values():
                task.cancel()
            raise self.failure
        cancelled = self.cancel.requested
        if self.running:
            await self.stop("cancelled" if cancelled else state.stop_reason)
        return ScheduleEnd(cancelled=cancelled, waiting=self.waiting)

    async def time_out(self) -> None:
        """Stop the run when its ``timeout_s`` is used up (engine/runner.py's clock)."""
        await self.runner.time_limit()
        self.timed_out = True
        self.state.time_out()
        self.wake.set()

    def consider(self, candidates: Iterable[str]) -> None:
        """Start or settle every candidate that is PENDING and ready; follow what settles.

        One store transaction holds it all — the steps started (``step_started``) and the
        steps settled without running — and, called from a step's task, that step's own
        result too (:meth:`run`): a wavefront is one commit, not one per step.
        """
        runner, rules, state, running, cancel = (
            self.runner,
            self.runner.rules,
            self.state,
            self.running,
            self.cancel,
        )
        steps, order = state.steps, rules.order
        queued = set(candidates)
        # (place, step) pairs: a set iterates in the same order twice while it is unchanged
        queue = list(zip(map(order.__getitem__, queued), queued))
        heapq.heapify(queue)
        create_task = self.create_task
        with runner.store.batch():
            # not halted(): a limit or a cancel starts nothing more (read as fields, a few times a step)
            while queue and not (state.limit_reason or cancel.requested):
                _, step_id = heapq.heappop(queue)
                queued.discard(step_id)
                if steps[step_id].status != StepStatus.PENDING or step_id in running:
                    continue
                readiness = rules.readiness(step_id)
                if readiness.action == "wait":
                    continue
                if readiness.action == "run":
                    begun = runner.begin(step_id)
                    if isinstance(begun, BegunStep):
                        running[step_id] = create_task(self.run(begun), name=f"step:{step_id}")
                        continue
                    if begun.status == StepStatus.PENDING:  # a limit stopped the run
                        continue
                    reset = begun.effects.reset
                else:
                    reset = runner.settle_unrun(step_id, readiness).reset
                for follower in (*rules.followers(step_id), *reset):
                    if follower not in queued:
                        queued.add(follower)
                        heapq.heappush(queue, (order[follower], follower))

    async def run(self, begun: BegunStep) -> None:
        """One step's task: run it, then settle it and start what it made ready, in one
        store transaction (its result is committed with them, before anything acts on it)."""
        step_id = begun.record.step_id
        try:
            try:
                settle = await self.runner.execute(begun)
            finally:
                del self.running[step_id]
            with self.runner.store.batch():
                reset = settle().effects.reset
                self.consider((*self.runner.rules.followers(step_id), *reset))
        except WaitingForHuman:
            self.waiting.add(step_id)
            self.runner.interrupts.mark_waiting(step_id)
        except Exception as error:  # noqa: BLE001 - handed to drive(), which raises it
            self.failure = self.failure or error
        finally:
            if self.failure is not None or not self.running or self.halted():
                self.wake.set()

    async def stop(self, reason: str) -> None:
        """Cancel running steps; each becomes SKIPPED with the reason the run stopped."""
        tasks = dict(self.running)
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        for step_id in sorted(tasks, key=self.runner.rules.order_key):
            if not self.state.steps[step_id].status.settled:
                self.runner.settle_stopped(step_id, reason)
