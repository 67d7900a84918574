"""The Kahn engine: an asyncio wavefront scheduler (ADR-001, DESIGN §5).

A step starts the moment its last dependency settles — the scheduler looks only
at the dependents of the step that just settled (Kahn's algorithm), and never
waits for unrelated steps. Everything about *running* a step lives in
engine/runner.py, shared with the LangGraph engine; this module only decides
when, and owns the run's life: start, limits, cancellation, WAITING, resume and
fork.

Steps that become ready together start in topological order (declaration order
breaks ties), so the per-step events and results of a run are the same on every
run of the same definition and inputs.
"""
from __future__ import annotations

import asyncio
from typing import Iterable

from engine.events import Log, RunFinished, RunStarted, StepFailed, StepFinished, StepSkipped
from engine.graph import WorkflowGraph
from engine.protocol import EngineCapabilities, ExecutionResult, RunContext
from engine.run_inputs import resolve_inputs
from engine.run_state import RunState
from engine.runner import Readiness, Sleep, StepOutcome, StepRunner, WaitingForHuman
from engine.spec import WorkflowDefinition
from engine.states import RunStatus, StepStatus
from engine.steps import REGISTRY, StepRegistry
from engine.store import BaseRunStore


class RunNotResumable(RuntimeError):
    """The run has finished (or is unknown to this engine's rules) and cannot be resumed."""


class KahnEngine:
    name = "kahn"
    capabilities = EngineCapabilities(cycles=True, interrupts_hold_superstep=False, checkpoints=False, fork=True)

    def __init__(self, registry: StepRegistry = REGISTRY, sleep: Sleep = asyncio.sleep) -> None:
        self.registry = registry
        self.sleep = sleep
        self._cancel_requests: dict[str, asyncio.Queue[asyncio.Task[StepOutcome] | None]] = {}
        """Per running run, its completion queue; ``cancel`` puts None in it."""

    # -- the protocol ----------------------------------------------------------
    async def execute(self, wf: WorkflowDefinition, run: RunContext) -> ExecutionResult:
        store: BaseRunStore = run.store
        inputs = resolve_inputs(wf, run.inputs)
        run_id = store.create_run(wf, inputs, self.name, run.engine_reason, run_id=run.run_id)
        state = RunState.fresh(run_id, wf, inputs)
        runner = self._runner(state, WorkflowGraph(wf), run)
        self._announce(runner, run, resumed=False)
        return await self._drive(runner)

    async def resume(self, run_id: str, run: RunContext) -> ExecutionResult:
        """Continue a run that was interrupted (kill -9 included) or left WAITING.

        Finished steps keep their results; steps that were running start again
        and their journaled calls replay; pending interrupts are answered from
        ``run.answers``, stored answers or the responder.
        """
        store: BaseRunStore = run.store
        record = store.get_run(run_id)
        if record.status.final:
            raise RunNotResumable(f"run {run_id} is {record.status.value}; only a RUNNING or WAITING run resumes")
        wf = record.definition
        state = RunState.restore(run_id, wf, record.inputs, store.step_results(run_id), record.engine_state)
        runner = self._runner(state, WorkflowGraph(wf), run)
        self._announce(runner, run, resumed=True)
        with store.batch():
            for step in state.steps.values():
                runner.save(step)
        return await self._drive(runner)

    async def fork(self, run_id: str, at_step: str, run: RunContext) -> ExecutionResult:
        """A new run that keeps every result not downstream of ``at_step`` and runs the rest."""
        store: BaseRunStore = run.store
        parent = store.get_run(run_id)
        wf = parent.definition
        if at_step not in wf.step_ids:
            raise KeyError(f"workflow {wf.name!r} has no step {at_step!r}")
        graph = WorkflowGraph(wf)
        rerun = {at_step} | graph.descendants(at_step)
        kept_results = store.step_results(run_id)
        new_id = store.create_run(
            wf, parent.inputs, self.name, run.engine_reason or f"fork of {run_id} at {at_step}",
            run_id=run.run_id, parent=run_id, forked_at=at_step,
        )
        state = RunState.fresh(new_id, wf, parent.inputs)
        runner = self._runner(state, graph, run)
        self._announce(runner, run, resumed=False, forked_from=run_id)
        kept: list[str] = []
        with store.batch():
            for step_id in graph.topological_order():
                result = kept_results.get(step_id)
                record = state.steps[step_id]
                if result is None:
                    continue
                kept_routers = {r for r in result.routed_by if r not in rerun}
                record.routed_by = kept_routers
                record.not_routed_by = {r for r in result.not_routed_by if r not in rerun}
                if step_id in rerun or not result.status.settled:
                    record.changed()
                    continue
                record.status = result.status
                record.iteration = result.iteration
                record.outputs = dict(result.outputs)
                record.reason = result.reason
                record.history = list(result.history)
                record.changed()
                kept.append(step_id)
                self._replay_settled(runner, step_id)
            for record in state.steps.values():
                runner.save(record)
            runner.emit(Log(run_id=new_id, message=f"fork of {run_id} at {at_step}: kept {len(kept)} step results"))
        return await self._drive(runner)

    def cancel(self, run_id: str) -> None:
        """Ask a running run to stop: running steps are cancelled and the run ends CANCELLED."""
        completed = self._cancel_requests.get(run_id)
        if completed is not None:
            completed.put_nowait(None)

    # -- setting up ----------------------------------------------------------------
    def _runner(self, state: RunState, graph: WorkflowGraph, run: RunContext) -> StepRunner:
        return StepRunner(
            state=state, graph=graph, store=run.store, run=run, engine_name=self.name,
            registry=self.registry, sleep=self.sleep,
        )

    def _announce(self, runner: StepRunner, run: RunContext, *, resumed: bool, forked_from: str | None = None) -> None:
        state = runner.state
        nodes, edges = runner.graph.nodes_and_edges()
        with runner.store.batch():
            runner.store.set_status(state.run_id, RunStatus.RUNNING)
            runner.emit(
                RunStarted(
                    run_id=state.run_id, workflow=state.wf.name, source=state.wf.source, engine=self.name,
                    engine_reason=run.engine_reason, inputs=state.inputs, nodes=nodes, edges=edges,
                    resumed=resumed, forked_from=forked_from,
                )
            )
            if not resumed:
                for record in state.steps.values():
                    runner.save(record)

    @staticmethod
    def _replay_settled(runner: StepRunner, step_id: str) -> None:
        """Show a kept result in the fork's own event log."""
        record = runner.state.steps[step_id]
        run_id = runner.run_id
        if record.status == StepStatus.SUCCEEDED:
            runner.emit(StepFinished(run_id=run_id, step_id=step_id, iteration=record.iteration, outputs=record.outputs))
        elif record.status == StepStatus.SKIPPED:
            runner.emit(StepSkipped(run_id=run_id, step_id=step_id, iteration=record.iteration, reason=record.reason))
        else:
            runner.emit(StepFailed(run_id=run_id, step_id=step_id, iteration=record.iteration, error=record.reason,
                                   upstream=record.status == StepStatus.UPSTREAM_FAILED,
                                   optional=record.spec.optional))

    # -- scheduling ----------------------------------------------------------------------
    async def _drive(self, runner: StepRunner) -> ExecutionResult:
        """Kahn's algorithm on a completion queue: each finished step task lands in
        the queue, and only its dependents (and what its route reset) are looked at."""
        state = runner.state
        completed: asyncio.Queue[asyncio.Task[StepOutcome] | None] = asyncio.Queue()
        self._cancel_requests[state.run_id] = completed
        running: dict[asyncio.Task[StepOutcome], str] = {}
        waiting: set[str] = set()
        stop_reason = ""

        def consider(candidates: Iterable[str]) -> None:
            """Start or settle every candidate that is PENDING and ready; follow what settles."""
            queue = sorted(set(candidates), key=runner.order_key)
            while queue and not (state.limit_reason or state.terminated_by):
                step_id = queue.pop(0)
                record = state.steps[step_id]
                if record.status != StepStatus.PENDING or step_id in running.values():
                    continue
                readiness = runner.readiness(step_id)
                if readiness.action == "wait":
                    continue
                if readiness.action == "run":
                    task = asyncio.create_task(runner.run_step(step_id), name=f"step:{step_id}")
                    running[task] = step_id
                    task.add_done_callback(completed.put_nowait)
                    continue
                effects = runner.settle_unrun(step_id, readiness)
                queue = sorted(set(queue) | set(runner.dependents(step_id)) | set(effects.reset),
                               key=runner.order_key)

        def settle(task: asyncio.Task[StepOutcome]) -> None:
            step_id = running.pop(task)
            try:
                outcome = task.result()
            except WaitingForHuman:
                waiting.add(step_id)
                runner.mark_waiting(step_id)
                return
            if outcome.effects.terminate:
                state.terminated_by = state.terminated_by or step_id
            if outcome.status == StepStatus.PENDING or state.limit_reason or state.terminated_by:
                return
            consider([*runner.dependents(step_id), *outcome.effects.reset])

        try:
            consider(state.steps)
            deadline = asyncio.get_running_loop().time() + state.wf.limits.timeout_s - state.elapsed_s
            try:
                async with asyncio.timeout_at(deadline):
                    while running and not (state.limit_reason or state.terminated_by):
                        done = [await completed.get()]
                        while not completed.empty():
                            done.append(completed.get_nowait())
                        if None in done:
                            stop_reason = "cancelled"
                            break
                        for task in sorted(done, key=lambda t: runner.order_key(running[t])):  # type: ignore[index]
                            settle(task)  # type: ignore[arg-type]
            except TimeoutError:
                state.limit_reason = f"timeout_s {state.wf.limits.timeout_s:g} reached"
        except asyncio.CancelledError:
            await self._stop(runner, running, "cancelled")
            self._finish(runner, RunStatus.CANCELLED, "cancelled", waiting)
            raise
        finally:
            self._cancel_requests.pop(state.run_id, None)
        if running:
            await self._stop(runner, running, stop_reason or state.limit_reason or f"terminated by {state.terminated_by}")
        if stop_reason:
            self._skip_remaining(runner, stop_reason)
            return self._finish(runner, RunStatus.CANCELLED, stop_reason, waiting)
        if state.limit_reason or state.terminated_by:
            self._skip_remaining(runner, state.limit_reason or f"terminated by {state.terminated_by}")
            return self._finish(runner, None, "", waiting)
        if waiting:
            return self._finish(runner, RunStatus.WAITING, "", waiting)
        return self._finish(runner, None, "", waiting)

    async def _stop(self, runner: StepRunner, running: dict[asyncio.Task[StepOutcome], str], reason: str) -> None:
        """Cancel running steps; each becomes SKIPPED with the reason the run stopped."""
        tasks = list(running)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for task in sorted(tasks, key=lambda t: runner.order_key(running[t])):
            step_id = running.pop(task)
            record = runner.state.steps[step_id]
            if not record.status.settled:
                runner.settle_unrun(step_id, _stopped(reason))

    def _skip_remaining(self, runner: StepRunner, reason: str) -> None:
        for step_id in runner.graph.topological_order():
            record = runner.state.steps[step_id]
            if not record.status.settled:
                runner.settle_unrun(step_id, _stopped(reason))

    def _finish(
        self, runner: StepRunner, status: RunStatus | None, reason: str, waiting: set[str]
    ) -> ExecutionResult:
        state = runner.state
        concluded, concluded_reason, missing, outputs = runner.conclude()
        if status is None:
            status, reason = concluded, concluded_reason
        elif status == RunStatus.WAITING:
            reason = f"waiting for an answer at {', '.join(sorted(waiting, key=runner.order_key))}"
        pending = [record.interrupt_id for record in runner.store.pending_interrupts(state.run_id)]
        step_statuses = state.statuses()
        store = runner.store
        with store.batch():
            runner.save_engine_state()
            store.set_status(state.run_id, status, reason, outputs if status.final else None)
            runner.emit(
                RunFinished(
                    run_id=state.run_id, status=status, reason=reason, outputs=outputs if status.final else {},
                    missing=missing if status.final else [],
                    step_statuses={k: v.value for k, v in step_statuses.items()},
                )
            )
        return ExecutionResult(
            run_id=state.run_id, status=status, reason=reason, outputs=outputs if status.final else {},
            step_statuses=step_statuses, missing=missing if status.final else [], pending_interrupts=pending,
            engine=self.name,
        )


def _stopped(reason: str) -> Readiness:
    return Readiness("skip", f"run stopped: {reason}")
