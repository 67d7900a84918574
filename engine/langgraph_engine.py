"""The LangGraph engine (ADR-001 option D, DESIGN §5).

The same definition as the Kahn engine, compiled into a LangGraph ``StateGraph``
(engine/langgraph_compile.py) and run in supersteps with a checkpoint after
each one. Both engines share everything but scheduling:

* each node runs its step with the shared :class:`~engine.runner.StepRunner`
  (trigger rules, ``when``, inputs, interrupts, retries, validation, routing),
  and the run's life — start, resume, fork, cancel, the final status — is the
  shared :class:`~engine.lifecycle.EngineBase`; this module is the scheduler;
* so the run store receives the same events from both, and the TUI can tell
  them apart only by the engine name.

Interrupts go through ``langgraph.types.interrupt()``: the step's
``StepContext.interrupt()`` reaches the runner, which records the interrupt in
the run store and pauses the node with :func:`pause_for_answer`. The superstep
finishes, the graph stops, and the engine announces each pending interrupt with
the steps it holds (``held_steps``). Answers — from the store, from ``--answer``,
from the responder — are recorded in the store and the graph resumes with
``Command(resume={interrupt id: answer})``. The node runs again from its first
line (``run_step(..., continuing=True)``); its journaled calls replay, so no
model call is repeated, and the re-run is not counted as a new start.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
from langgraph.types import Command, Interrupt, interrupt

from engine.context import InterruptAnswer
from engine.events import InterruptRaised
from engine.interrupts import AnswerPause, WaitingForHuman
from engine.langgraph_checkpoint import (
    DURABILITY,
    open_checkpointer,
    open_postgres_checkpointer,
)
from engine.langgraph_compile import GraphState, NodeFunction, build_state_graph
from engine.langgraph_history import HistoryEntry, checkpoint_history, store_history
from engine.lifecycle import CancelRequest, EngineBase, ScheduleEnd
from engine.protocol import EngineCapabilities
from engine.runner import Clock, Sleep, StepRunner
from engine.states import RoutingSignal, StepStatus
from engine.steps import REGISTRY, StepRegistry
from engine.store import BaseRunStore, InterruptClosed, InterruptRecord
from plumbing.workspace import Workspace

STREAM_MODE = "tasks"
"""The graph is driven through ``astream``; the run events themselves are written by the
shared runner, store first, so they are the same events whichever engine runs."""


class LangGraphWaiting(WaitingForHuman, GraphInterrupt):
    """A step paused by ``interrupt()``: the runner lets it through as WaitingForHuman,
    LangGraph records it as the node's interrupt (``args[0]`` are its Interrupts)."""

    def __init__(self, interrupt_id: str, step_id: str, interrupts: Sequence[Interrupt]) -> None:
        WaitingForHuman.__init__(self, interrupt_id, step_id)
        self.args = (tuple(interrupts),)


async def pause_for_answer(stored: InterruptRecord) -> InterruptAnswer:
    """The runner's pause on this engine: ``interrupt()`` stops the node until the graph
    is resumed with the answer (the engine announces the interrupt with its superstep)."""
    pause = {
        "interrupt_id": stored.interrupt_id,
        "step_id": stored.step_id,
        "kind": stored.request.kind,
        "prompt": stored.request.prompt,
    }
    try:
        while True:
            # Resume values are matched to interrupt() calls by position within the node; a
            # journaled earlier interrupt makes no call, so check that the value is ours.
            value = interrupt(pause)
            if isinstance(value, dict) and value.get("interrupt_id") == stored.interrupt_id:
                break
    except GraphInterrupt as paused:
        raise LangGraphWaiting(
            stored.interrupt_id, stored.step_id, paused.args[0] if paused.args else ()
        ) from None
    return InterruptAnswer.model_validate(value["answer"])


class LangGraphEngine(EngineBase):
    name = "langgraph"
    capabilities = EngineCapabilities(
        cycles=True, interrupts_hold_superstep=True, checkpoints=True, fork=True
    )

    def __init__(
        self,
        registry: StepRegistry = REGISTRY,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        checkpoint_path: Path | None = None,
        saver: BaseCheckpointSaver[Any] | None = None,
    ) -> None:
        super().__init__(registry=registry, sleep=sleep, clock=clock)
        self.checkpoint_path = checkpoint_path
        self.saver = saver
        """A checkpointer to use whatever the store (tests); else the file next to the store."""
        self._memory_saver = InMemorySaver()
        """Checkpoints of runs on a store without a file (tests, benchmarks): per engine instance."""

    # -- checkpoints -------------------------------------------------------------
    def checkpoint_file(self, store: BaseRunStore) -> Path | None:
        """The explicit path, else the checkpoints of the workspace the run store is in."""
        if self.checkpoint_path is not None:
            return self.checkpoint_path
        store_path = getattr(store, "path", None)
        return Workspace(Path(store_path).parent).checkpoints_db if store_path is not None else None

    @asynccontextmanager
    async def checkpointer(self, store: BaseRunStore) -> AsyncIterator[BaseCheckpointSaver[Any]]:
        if self.saver is not None:
            yield self.saver
            return
        database = getattr(store, "database", None)  # the PostgreSQL store's: its checkpoints too
        if database is not None:
            async with open_postgres_checkpointer(database, store.lease_of) as saver:
                yield saver
            return
        path = self.checkpoint_file(store)
        if path is None:
            yield self._memory_saver
            return
        async with open_checkpointer(path) as saver:
            yield saver

    async def history(self, run_id: str, store: BaseRunStore) -> list[HistoryEntry]:
        """The checkpoints of a run: LangGraph's own for a run this engine drove,
        the stored step transitions for a run without any."""
        async with self.checkpointer(store) as saver:
            entries = await checkpoint_history(saver, run_id)
        return entries or store_history(store, run_id)

    # -- this engine's pause and scheduler ------------------------------------------
    def answer_pause(self) -> AnswerPause:
        return pause_for_answer

    async def schedule(self, runner: StepRunner, cancel: CancelRequest) -> ScheduleEnd:
        """Stream the compiled graph superstep by superstep; between streams, answer the
        interrupts the graph paused on and resume it with them.

        The run store is the source of truth: when the graph ends while a step the store
        says is ready was never dispatched (a checkpoint older than the store after a
        crash), the graph starts again from START, which dispatches from the store."""
        state = runner.state
        session = _Session(runner)
        waiting: list[str] = []
        restarts = 0
        try:
            async with self.checkpointer(runner.store) as saver:
                app = build_state_graph(
                    runner.graph.topological_order(), session.node_for, session.start
                ).compile(checkpointer=saver)
                config: Any = {
                    "configurable": {"thread_id": state.run_id},
                    "recursion_limit": session.recursion_limit(),
                }
                snapshot = await app.aget_state(config)
                payload: Any = None if snapshot.next else session.initial_state()
                held = bool(snapshot.interrupts)
                while True:
                    if not held:
                        outcome = await _stream(app, payload, config, runner, cancel)
                        if outcome == "timeout":
                            state.time_out()
                            break
                        if outcome == "cancelled":
                            return ScheduleEnd(cancelled=True)
                        snapshot = await app.aget_state(config)
                    held = False
                    if state.stop_reason:
                        break
                    if not snapshot.interrupts:
                        if restarts < _MAX_RESTARTS and session.undispatched():
                            restarts += 1
                            payload = session.initial_state()
                            continue
                        break
                    resume, waiting = await session.answer(snapshot.interrupts)
                    if not resume:
                        break
                    payload = Command(resume=resume)
        except asyncio.CancelledError:
            _settle_running(runner, "cancelled")
            raise
        return ScheduleEnd(waiting=waiting)


_MAX_RESTARTS = 3
"""Restarts from the store in one drive; more would mean a scheduling defect, which the
run's end reports (a step left unsettled fails the run with the steps named)."""


def _settle_running(runner: StepRunner, reason: str) -> None:
    """Steps cut off while running are skipped with the reason the run stopped (as on Kahn)."""
    for step_id in runner.graph.topological_order():
        if runner.state.steps[step_id].status == StepStatus.RUNNING:
            runner.settle_stopped(step_id, reason)


async def _stream(
    app: Any, payload: Any, config: Any, runner: StepRunner, cancel: CancelRequest
) -> str:
    """Run the graph until it ends or pauses: "done", "timeout" (the run's ``timeout_s``, on
    the engine's clock) or "cancelled"."""
    if runner.state.remaining_s <= 0:
        return "timeout"

    async def consume() -> None:
        async for _chunk in app.astream(
            payload, config, stream_mode=STREAM_MODE, durability=DURABILITY
        ):
            pass

    worker = asyncio.create_task(consume(), name="langgraph-stream")
    canceller = asyncio.create_task(cancel.wait(), name="cancel-request")
    timer = asyncio.create_task(runner.time_limit(), name="run-timeout")
    try:
        done, _ = await asyncio.wait(
            [worker, canceller, timer], return_when=asyncio.FIRST_COMPLETED
        )
    except asyncio.CancelledError:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
        raise
    finally:
        canceller.cancel()
        timer.cancel()
    if worker in done:
        worker.result()
        return "done"
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    return "cancelled" if canceller in done else "timeout"


class _Session:
    """One drive of one run: the node functions, the dispatch, the interrupt round trip."""

    def __init__(self, runner: StepRunner) -> None:
        self.runner = runner
        self.state = runner.state
        self._announced = {
            event.interrupt_id
            for event in runner.store.events(runner.run_id)
            if isinstance(event, InterruptRaised)
        }

    # -- the compiled graph's functions -------------------------------------------
    def recursion_limit(self) -> int:
        """Above our own bound: a superstep runs at least one step or settles a dispatched
        one, and every pass of a loop may settle each step once."""
        steps = len(self.state.wf.steps)
        bound = self.state.wf.limits.step_run_bound(steps)
        return (bound + 1) * (steps + 2) + 25

    def mirror(self, step_ids: Sequence[str]) -> dict[str, Any]:
        steps = self.state.steps
        return {
            "statuses": {s: steps[s].status.value for s in step_ids},
            "outputs": {s: steps[s].outputs for s in step_ids},
            "iterations": {s: steps[s].iteration for s in step_ids},
            "step_runs": self.state.step_runs,
        }

    def initial_state(self) -> dict[str, Any]:
        update = self.mirror(list(self.state.steps))
        update["routes"] = {}
        return update

    async def start(self, graph_state: GraphState) -> Command[str]:
        """The first superstep: every step the store says is ready."""
        settled: list[str] = []
        ready = self.dispatch(self.runner.graph.topological_order(), settled)
        return Command(update=self.mirror(settled), goto=ready)

    def node_for(self, step_id: str) -> NodeFunction:
        async def node(graph_state: GraphState) -> Command[str]:
            touched, signal, candidates = await self._run(step_id)
            settled: list[str] = []
            ready = self.dispatch(candidates, settled)
            update = self.mirror([*touched, *settled])
            if signal is not None:
                update["routes"] = {
                    step_id: {
                        "decision": signal.decision,
                        "target": signal.next_step_id,
                        "route": signal.route,
                    }
                }
            return Command(update=update, goto=ready)

        node.__name__ = f"step_{step_id}"
        return node

    async def _run(self, step_id: str) -> tuple[list[str], RoutingSignal | None, list[str]]:
        """Run ``step_id`` if it is PENDING (or waiting for an answer) and ready:
        (steps changed, its route, the steps to check next). Anything else — settled,
        already running, or a dependency reset by a loop in the same superstep — is a
        dispatch to let pass: the step runs when what it waits for dispatches it again."""
        runner = self.runner
        record = self.state.steps[step_id]
        if self.state.stop_reason:
            return [], None, []
        if record.status == StepStatus.WAITING_HUMAN:
            readiness_action = "run"
        elif record.status != StepStatus.PENDING:
            return [], None, []
        else:
            readiness_action = runner.rules.readiness(step_id).action
        if readiness_action != "run":
            return [], None, [step_id] if readiness_action != "wait" else []
        try:
            outcome = await runner.run_step(
                step_id, continuing=record.status == StepStatus.WAITING_HUMAN
            )
        except WaitingForHuman:
            runner.interrupts.mark_waiting(step_id)
            raise
        if outcome.status == StepStatus.PENDING:  # a limit stopped it before it started
            return [], None, []
        reset = outcome.effects.reset
        return [step_id, *reset], outcome.signal, [*runner.rules.followers(step_id), *reset]

    def dispatch(self, candidates: Iterable[str], settled: list[str]) -> list[str]:
        """The candidates that can run now, in topological order. Those that will not run
        (skipped, failed upstream) are settled here, and what follows them is checked in
        turn; their ids are appended to ``settled``."""
        runner, steps = self.runner, self.state.steps
        if self.state.stop_reason:
            return []
        queue = [(runner.rules.order_key(step_id), step_id) for step_id in set(candidates)]
        heapq.heapify(queue)
        queued = {step_id for _, step_id in queue}
        ready: list[str] = []
        while queue:
            _, step_id = heapq.heappop(queue)
            queued.discard(step_id)
            if steps[step_id].status != StepStatus.PENDING or step_id in ready:
                continue
            readiness = runner.rules.readiness(step_id)
            if readiness.action == "wait":
                continue
            if readiness.action == "run":
                ready.append(step_id)
                continue
            effects = runner.settle_unrun(step_id, readiness)
            settled.append(step_id)
            for follower in (*runner.rules.followers(step_id), *effects.reset):
                if follower not in queued:
                    queued.add(follower)
                    heapq.heappush(queue, (runner.rules.order_key(follower), follower))
        return sorted(ready, key=runner.rules.order_key)

    def undispatched(self) -> bool:
        """True when a step the store says is ready to settle was left without a dispatch."""
        runner = self.runner
        return any(
            record.status == StepStatus.PENDING and runner.rules.readiness(step_id).action != "wait"
            for step_id, record in self.state.steps.items()
        )

    # -- interrupts ------------------------------------------------------------------
    def held_steps(self, step_id: str) -> list[str]:
        """The waiting step and every step ready to start that the held superstep keeps waiting."""
        runner = self.runner
        ready = [
            s
            for s in runner.graph.topological_order()
            if s != step_id
            and self.state.steps[s].status == StepStatus.PENDING
            and runner.rules.readiness(s).action != "wait"
        ]
        return [step_id, *ready]

    async def answer(self, interrupts: Sequence[Interrupt]) -> tuple[dict[str, Any], list[str]]:
        """Announce pending interrupts, gather their answers; (resume map, steps still waiting)."""
        runner = self.runner
        store = runner.store
        pending: list[tuple[Interrupt, InterruptRecord]] = []
        for item in interrupts:
            value = item.value if isinstance(item.value, dict) else {}
            record = store.get_interrupt(str(value.get("interrupt_id", "")))
            if record is not None:
                pending.append((item, record))
        raised: dict[str, InterruptRaised] = {}
        for _, record in pending:
            event = runner.interrupts.raised_event(record, self.held_steps(record.step_id))
            if record.interrupt_id not in self._announced:
                runner.recorder.emit(event)
                self._announced.add(record.interrupt_id)
            raised[record.interrupt_id] = event

        async def one(record: InterruptRecord) -> InterruptAnswer | None:
            if record.answer is not None:
                return record.answer
            given = await runner.interrupts.answer_given(record, raised[record.interrupt_id])
            if given is None:
                return None
            try:
                store.record_answer(record.interrupt_id, given)
            except InterruptClosed as closed:  # answered elsewhere first: that answer stands
                return closed.record.answer
            return given

        answers = await asyncio.gather(*(one(record) for _, record in pending))
        resume: dict[str, Any] = {}
        waiting: list[str] = []
        for (item, record), answer in zip(pending, answers):
            if answer is None:
                waiting.append(record.step_id)
            else:
                resume[item.id] = {
                    "interrupt_id": record.interrupt_id,
                    "answer": answer.model_dump(mode="json"),
                }
        return resume, waiting
