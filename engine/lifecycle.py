"""The life of a run, the same on every engine (ADR-001 option D, DESIGN §5).

An engine contributes only its scheduler — *when* steps run — through
:meth:`EngineBase.schedule`. Everything else about a run is here, once:

* start: create the run in the store and announce ``run_started`` with the
  graph and the reason the engine was chosen;
* resume: rebuild the run's state from the store (finished steps keep their
  results; steps that were running start again, their journaled calls replay);
* fork at a step's pass (time travel, engine/time_travel.py): a new run from the
  state just before that pass began, optionally with edited outputs or inputs,
  its kept results replayed into the new run's own event log;
* cancel: a per-run request the scheduler waits on;
* ownership: the store records this process as the run's owner from its start or
  resume until it finishes or goes WAITING; a run another live process (or this
  one) drives is not resumed (:func:`resume_refusal`, :class:`~engine.store.RunOwned`);
* the end: steps the stop cut off are skipped with its reason, the completion
  criteria decide the status, and ``run_finished`` closes the event log.

Running one step is engine/runner.py's, shared as well.
"""

from __future__ import annotations

import asyncio
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass

from engine.completion import conclude
from engine.events import (
    Budget,
    Log,
    RunFinished,
    RunStarted,
    StepFailed,
    StepFinished,
    StepSkipped,
)
from engine.graph import WorkflowGraph
from engine.interrupts import AnswerPause
from engine.protocol import EngineCapabilities, ExecutionResult, ForkEdits, RunContext
from engine.run_inputs import resolve_inputs
from engine.run_state import RunState
from engine.runner import Clock, Sleep, StepRunner
from engine.spec import WorkflowDefinition
from engine.states import SETTLED, RunStatus, StepStatus
from engine.steps import REGISTRY, StepRegistry
from engine.store import BaseRunStore, RunOwned, RunSummary, new_run_id
from engine.time_travel import ForkPoint, fork_state
from plumbing.collector import cycle_collection_paused

_DRIVING: set[str] = set()
"""Runs this process is driving right now (an engine's ``_drive`` is under way)."""


def resume_refusal(record: RunSummary, *, leased: bool = False) -> str | None:
    """Why ``record`` must not be resumed here because someone drives it; None when it may be.

    ``leased``: this process claimed the run's lease (engine/store/lease.py), which fences out
    any other holder, so another live owner does not refuse it."""
    if record.run_id in _DRIVING:
        return f"run {record.run_id} is already running in this process"
    if (
        not leased
        and record.status == RunStatus.RUNNING
        and record.owner_status == "alive"
        and record.owner is not None
        and record.owner.pid != os.getpid()
    ):
        return (
            f"run {record.run_id} is running in another process ({record.owner.describe()}); "
            "not resuming it twice"
        )
    return None


class RunNotResumable(RuntimeError):
    """The run has finished (or is unknown to this engine's rules) and cannot be resumed."""


class CancelRequest:
    """One run's request to stop, set by :meth:`EngineBase.cancel`.

    A scheduler either awaits :meth:`wait` (LangGraph, next to its stream) or
    registers a callback that wakes its own loop (Kahn).
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._callbacks: list[Callable[[], None]] = []
        self.requested = False
        """Whether the run was asked to stop (read before every step starts: a plain field)."""

    def request(self) -> None:
        if self.requested:
            return
        self.requested = True
        self._event.set()
        for callback in self._callbacks:
            callback()

    def on_request(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the run is asked to stop (at once if it already was)."""
        if self.requested:
            callback()
        else:
            self._callbacks.append(callback)

    async def wait(self) -> None:
        await self._event.wait()


@dataclass(frozen=True)
class ScheduleEnd:
    """How a scheduler's part of a run ended; the run's state says whether a limit or a
    termination stopped it."""

    cancelled: bool = False
    waiting: Collection[str] = ()
    """Steps that wait for an answer nobody gave: the run goes WAITING."""


class EngineBase(ABC):
    """An :class:`~engine.protocol.ExecutionEngine` whose subclass supplies the scheduler."""

    name: str
    capabilities: EngineCapabilities

    def __init__(
        self,
        registry: StepRegistry = REGISTRY,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
    ) -> None:
        self.registry = registry
        self.sleep = sleep
        self.clock = clock
        self._cancel_requests: dict[str, CancelRequest] = {}

    # -- the engine's part -------------------------------------------------------
    @abstractmethod
    async def schedule(self, runner: StepRunner, cancel: CancelRequest) -> ScheduleEnd:
        """Run the steps of ``runner``'s run until every step has settled, the run stops
        (``runner.state.stop_reason``), it is cancelled, or it waits for answers.

        On ``asyncio.CancelledError`` the scheduler settles what it had running and
        re-raises; the run then ends CANCELLED.
        """

    def answer_pause(self) -> AnswerPause | None:
        """How this engine pauses a step until a person answers (see ``StepRunner``).

        None, the default: the run's responder answers, else the step waits and
        the run may go WAITING.
        """
        return None

    def _new_runner(self, state: RunState, graph: WorkflowGraph, run: RunContext) -> StepRunner:
        return StepRunner(
            state=state,
            graph=graph,
            store=run.store,
            run=run,
            engine_name=self.name,
            registry=self.registry,
            sleep=self.sleep,
            clock=self.clock,
            pause=self.answer_pause(),
        )

    # -- the protocol ----------------------------------------------------------
    async def execute(self, wf: WorkflowDefinition, run: RunContext) -> ExecutionResult:
        store: BaseRunStore = run.store
        inputs = resolve_inputs(wf, run.inputs)
        run_id = store.create_run(wf, inputs, self.name, run.engine_reason, run_id=run.run_id)
        with cycle_collection_paused():
            runner = self._new_runner(RunState.fresh(run_id, wf, inputs), WorkflowGraph.of(wf), run)
        self._announce(runner, run, resumed=False, new=True)
        return await self._drive(runner)

    async def resume(self, run_id: str, run: RunContext) -> ExecutionResult:
        """Continue a run that was interrupted (kill -9 included) or left WAITING.

        Finished steps keep their results; steps that were running start again
        and their journaled calls replay; pending interrupts are answered from
        stored answers or the responder.
        """
        store: BaseRunStore = run.store
        record = store.get_run(run_id)
        if record.status.final:
            raise RunNotResumable(
                f"run {run_id} is {record.status.value}; only a RUNNING or WAITING run resumes"
            )
        refusal = (
            # a store that claimed the run's lease (a worker) is fenced: a holder that lost
            # the run can never write again, so whether it still runs does not matter
            resume_refusal(record, leased=store.lease_of(run_id) is not None)
        )
        if refusal:
            raise RunOwned(refusal, run_id)
        store.claim_owner(run_id)
        wf = record.definition
        results = store.step_results(run_id)
        counted = store.last_event(run_id, "budget")
        with cycle_collection_paused():
            state = RunState.restore(
                run_id,
                wf,
                record.inputs,
                results,
                record.engine_state,
                counted if isinstance(counted, Budget) else None,
            )
            runner = self._new_runner(state, WorkflowGraph.of(wf), run)
        # a run queued for a worker starts by a resume: it has no step results yet
        self._announce(runner, run, resumed=bool(results))
        return await self._drive(runner)

    async def fork(
        self, run_id: str, at_step: str, run: RunContext, edits: ForkEdits | None = None
    ) -> ExecutionResult:
        """A new run from ``at_step`` (``STEP`` or ``STEP@ITERATION``) of ``run_id``: the
        state just before that pass began for everything the step can influence, every
        other result as the run left it (engine/time_travel.py), then ``edits``.

        Raises ForkError (a ValueError) with what to do when the fork cannot be made.
        """
        return await self._drive(self._staged_fork(run_id, at_step, run, edits))

    def stage_fork(
        self, run_id: str, at_step: str, run: RunContext, edits: ForkEdits | None = None
    ) -> str:
        """Store the fork :meth:`fork` makes — the new run, its kept results and state —
        without running on: its id. A :meth:`resume` (a worker's) runs it from the fork point.

        Raises ForkError as :meth:`fork` does; nothing is stored then."""
        with run.store.batch():
            return self._staged_fork(run_id, at_step, run, edits).run_id

    def _staged_fork(
        self, run_id: str, at_step: str, run: RunContext, edits: ForkEdits | None
    ) -> StepRunner:
        store: BaseRunStore = run.store
        wf = store.get_run(run_id).definition
        point = ForkPoint.parse(at_step)
        new_id = run.run_id or new_run_id()
        state = fork_state(store, run_id, point, edits or ForkEdits(), self.registry, new_id)
        inputs = state.inputs
        store.create_run(
            wf,
            inputs,
            self.name,
            run.engine_reason or f"fork of {run_id} at {point}",
            run_id=new_id,
            parent=run_id,
            forked_at=str(point),
        )
        graph = WorkflowGraph.of(wf)
        runner = self._new_runner(state, graph, run)
        self._announce(runner, run, resumed=False, forked_from=run_id)
        with store.batch():
            kept = 0
            for step_id in graph.topological_order():
                if state.steps[step_id].status.settled:
                    _replay_settled(runner, step_id)
                    kept += 1
            runner.recorder.save_engine_state()
            runner.recorder.emit(
                Log(
                    run_id=new_id,
                    message=f"fork of {run_id} at {point}: kept {kept} step results",
                )
            )
        return runner

    def cancel(self, run_id: str) -> None:
        """Ask a running run to stop: what runs is cancelled and the run ends CANCELLED."""
        request = self._cancel_requests.get(run_id)
        if request is not None:
            request.request()

    # -- the start and the end -------------------------------------------------------
    def _announce(
        self,
        runner: StepRunner,
        run: RunContext,
        *,
        resumed: bool,
        forked_from: str | None = None,
        new: bool = False,
    ) -> None:
        """Mark the run RUNNING, announce ``run_started`` and store every step's row as it
        stands (``new``: as :meth:`RunState.fresh` made them, no step run yet)."""
        state = runner.state
        with cycle_collection_paused(), runner.store.batch():
            nodes, edges = runner.graph.nodes_and_edges()
            runner.store.set_status(state.run_id, RunStatus.RUNNING)
            runner.recorder.emit(
                RunStarted(
                    run_id=state.run_id,
                    workflow=state.wf.name,
                    source=state.wf.source,
                    engine=self.name,
                    engine_reason=run.engine_reason,
                    inputs=state.inputs,
                    nodes=nodes,
                    edges=edges,
                    resumed=resumed,
                    forked_from=forked_from,
                )
            )
            if new:
                runner.recorder.save_new(state.steps.values())
            else:  # a resume stores its running steps back as PENDING
                for record in state.steps.values():
                    runner.recorder.save(record)

    async def _drive(self, runner: StepRunner) -> ExecutionResult:
        run_id = runner.run_id
        cancel = self._cancel_requests[run_id] = CancelRequest()
        _DRIVING.add(run_id)
        try:
            end = await self.schedule(runner, cancel)
        except asyncio.CancelledError:
            self._finish(runner, (RunStatus.CANCELLED, "cancelled"))
            raise
        except BaseException:
            _release(runner.store, run_id)  # the run stays RUNNING; shown as stopped, resumable
            raise
        finally:
            del self._cancel_requests[run_id]
            _DRIVING.discard(run_id)
        state = runner.state
        if end.cancelled:
            _skip_remaining(runner, "cancelled")
            return self._finish(runner, (RunStatus.CANCELLED, "cancelled"))
        if state.stop_reason:
            _skip_remaining(runner, state.stop_reason)
            return self._finish(runner)
        if end.waiting:
            waiting = ", ".join(sorted(end.waiting, key=runner.rules.order_key))
            return self._finish(runner, (RunStatus.WAITING, f"waiting for an answer at {waiting}"))
        defect = _fail_unsettled(runner)
        if defect:
            return self._finish(runner, (RunStatus.FAILED, defect))
        return self._finish(runner)

    def _finish(
        self, runner: StepRunner, ending: tuple[RunStatus, str] | None = None
    ) -> ExecutionResult:
        """Close the run: with ``ending`` (status, reason), or as the completion criteria decide."""
        state = runner.state
        concluded, concluded_reason, missing, outputs = conclude(runner.state)
        status, reason = ending or (concluded, concluded_reason)
        store = runner.store
        pending = [record.interrupt_id for record in store.pending_interrupts(state.run_id)]
        step_statuses = state.statuses()
        final_outputs = outputs if status.final else {}
        final_missing = missing if status.final else []
        with store.batch():
            runner.recorder.save_engine_state()
            store.set_status(state.run_id, status, reason, outputs if status.final else None)
            runner.recorder.emit(
                RunFinished(
                    run_id=state.run_id,
                    status=status,
                    reason=reason,
                    outputs=final_outputs,
                    missing=final_missing,
                    step_statuses={k: v._value_ for k, v in step_statuses.items()},
                )
            )
        return ExecutionResult(
            run_id=state.run_id,
            status=status,
            reason=reason,
            outputs=final_outputs,
            step_statuses=step_statuses,
            missing=final_missing,
            pending_interrupts=pending,
            engine=self.name,
        )


def _release(store: BaseRunStore, run_id: str) -> None:
    try:
        store.release_owner(run_id)
    except Exception:  # the store itself failed; the original error matters more
        pass


def _fail_unsettled(runner: StepRunner) -> str:
    """The invariant of every finished run: no step is left PENDING or RUNNING. A scheduler
    that ended with such steps has a defect; they fail with it named, and so does the run."""
    unsettled = _unsettled(runner)
    if not unsettled:
        return ""
    reason = (
        f"the {runner.engine_name} scheduler ended with {', '.join(unsettled)} never settled "
        "(an engine defect; please report it with this run)"
    )
    _settle_unsettled(runner, lambda step_id: runner.fail_unsettled(step_id, reason))
    return reason


def _skip_remaining(runner: StepRunner, reason: str) -> None:
    """Every step not settled when the run stopped is skipped with the reason."""
    _settle_unsettled(runner, lambda step_id: runner.settle_stopped(step_id, reason))


def _settle_unsettled(runner: StepRunner, settle: Callable[[str], None]) -> None:
    """Settle every unsettled step, in workflow order, until none is left: settling an active
    detour's target sends its declaring step back to PENDING for the return pass, which the
    end of the run cuts off as well (a second sweep; the detour is over then)."""
    while unsettled := _unsettled(runner):
        for step_id in unsettled:
            if not runner.state.steps[step_id].status.settled:
                settle(step_id)


def _unsettled(runner: StepRunner) -> list[str]:
    steps = runner.state.steps
    return [s for s in runner.graph.topological_order() if steps[s].status not in SETTLED]


def _replay_settled(runner: StepRunner, step_id: str) -> None:
    """Show a kept result in the fork's own event log."""
    record = runner.state.steps[step_id]
    run_id = runner.run_id
    if record.status == StepStatus.SUCCEEDED:
        runner.recorder.emit(
            StepFinished(
                run_id=run_id, step_id=step_id, iteration=record.iteration, outputs=record.outputs
            )
        )
    elif record.status == StepStatus.SKIPPED:
        runner.recorder.emit(
            StepSkipped(
                run_id=run_id, step_id=step_id, iteration=record.iteration, reason=record.reason
            )
        )
    else:
        runner.recorder.emit(
            StepFailed(
                run_id=run_id,
                step_id=step_id,
                iteration=record.iteration,
                error=record.reason,
                upstream=record.status == StepStatus.UPSTREAM_FAILED,
                optional=record.spec.optional,
            )
        )
