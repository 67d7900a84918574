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
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
from langgraph.graph import END
from langgraph.types import Command, Interrupt, interrupt

from engine.context import InterruptAnswer
from engine.events import InterruptRaised
from engine.interrupts import AnswerPause, WaitingForHuman
from engine.langgraph_checkpoint import CHECKPOINT_FILE, DURABILITY, open_checkpointer
from engine.langgraph_compile import (
    EXIT_SUFFIX,
    GraphState,
    NodeFunction,
    SchedulingPlan,
    build_state_graph,
    plan,
)
from engine.langgraph_history import HistoryEntry, checkpoint_history, store_history
from engine.lifecycle import CancelRequest, EngineBase, ScheduleEnd
from engine.protocol import EngineCapabilities
from engine.route_application import RouteEffects
from engine.runner import Sleep, StepRunner
from engine.states import RoutingSignal, StepStatus
from engine.steps import REGISTRY, StepRegistry
from engine.store import BaseRunStore, InterruptRecord

STREAM_MODE = "tasks"
"""The graph is driven through ``astream``; the run events themselves are written by the
shared runner, store first, so they are the same events whichever engine runs."""


class LangGraphWaiting(WaitingForHuman, GraphInterrupt):
    """A step paused by ``interrupt()``: the runner lets it through as WaitingForHuman,
    LangGraph records it as the node's interrupt (``args[0]`` are its Interrupts)."""

    def __init__(self, interrupt_id: str, step_id: str, interrupts: Sequence[Interrupt]) -> None:
        WaitingForHuman.__init__(self, interrupt_id, step_id)
        self.args = (tuple(interrupts),)


class CheckpointBehind(RuntimeError):
    """A node was scheduled from a checkpoint older than the run store (a crash between a
    store commit and the checkpoint after it): the run restarts from the store."""


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
        checkpoint_path: Path | None = None,
        saver: BaseCheckpointSaver | None = None,
    ) -> None:
        super().__init__(registry=registry, sleep=sleep)
        self.checkpoint_path = checkpoint_path
        self.saver = saver
        """A checkpointer to use whatever the store (tests); else the file next to the store."""
        self._memory_saver = InMemorySaver()
        """Checkpoints of runs on a store without a file (tests, benchmarks): per engine instance."""

    # -- checkpoints -------------------------------------------------------------
    def checkpoint_file(self, store: BaseRunStore) -> Path | None:
        """``<workspace>/checkpoints.sqlite`` next to the run store, or the explicit path."""
        if self.checkpoint_path is not None:
            return self.checkpoint_path
        store_path = getattr(store, "path", None)
        return Path(store_path).parent / CHECKPOINT_FILE if store_path is not None else None

    @asynccontextmanager
    async def checkpointer(self, store: BaseRunStore) -> AsyncIterator[BaseCheckpointSaver]:
        if self.saver is not None:
            yield self.saver
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
        interrupts the graph paused on and resume it with them."""
        state = runner.state
        scheduling = plan(runner.graph)
        session = _Session(runner, scheduling)
        waiting: list[str] = []
        try:
            async with self.checkpointer(runner.store) as saver:
                app = build_state_graph(scheduling, session.node_for, session.route_for).compile(
                    checkpointer=saver
                )
                config: Any = {
                    "configurable": {"thread_id": state.run_id},
                    "recursion_limit": session.recursion_limit(),
                }
                snapshot = await app.aget_state(config)
                payload: Any = None if snapshot.next else session.initial_state()
                held = bool(snapshot.interrupts)
                restarted = False
                while True:
                    if not held:
                        try:
                            outcome = await _stream(app, payload, config, state.remaining_s, cancel)
                        except CheckpointBehind:
                            if restarted:
                                raise
                            # The store is the source of truth: start the graph again from it.
                            # Settled steps pass control on without running; the rest run.
                            restarted = True
                            payload = session.initial_state()
                            continue
                        if outcome == "timeout":
                            state.time_out()
                            break
                        if outcome == "cancelled":
                            return ScheduleEnd(cancelled=True)
                        snapshot = await app.aget_state(config)
                    held = False
                    if not snapshot.interrupts or state.stop_reason:
                        break
                    resume, waiting = await session.answer(snapshot.interrupts)
                    if not resume:
                        break
                    payload = Command(resume=resume)
        except asyncio.CancelledError:
            _settle_running(runner, "cancelled")
            raise
        return ScheduleEnd(waiting=waiting)


def _settle_running(runner: StepRunner, reason: str) -> None:
    """Steps cut off while running are skipped with the reason the run stopped (as on Kahn)."""
    for step_id in runner.graph.topological_order():
        if runner.state.steps[step_id].status == StepStatus.RUNNING:
            runner.settle_stopped(step_id, reason)


async def _stream(
    app: Any, payload: Any, config: Any, remaining: float, cancel: CancelRequest
) -> str:
    """Run the graph until it ends or pauses: "done", "timeout" or "cancelled"."""
    if remaining <= 0:
        return "timeout"

    async def consume() -> None:
        async for _chunk in app.astream(
            payload, config, stream_mode=STREAM_MODE, durability=DURABILITY
        ):
            pass

    worker = asyncio.create_task(consume(), name="langgraph-stream")
    canceller = asyncio.create_task(cancel.wait(), name="cancel-request")
    try:
        done, _ = await asyncio.wait(
            [worker, canceller], timeout=remaining, return_when=asyncio.FIRST_COMPLETED
        )
    except asyncio.CancelledError:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
        raise
    finally:
        canceller.cancel()
    if worker in done:
        worker.result()
        return "done"
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    return "cancelled" if canceller in done else "timeout"


class _Session:
    """One drive of one run: the node and edge functions, and the interrupt round trip."""

    def __init__(self, runner: StepRunner, scheduling: SchedulingPlan) -> None:
        self.runner = runner
        self.state = runner.state
        self.scheduling = scheduling
        self._step_predecessors = {
            step_id: {scheduling.step_of(p) for p in preds}
            for step_id, preds in scheduling.predecessors.items()
        }
        self._announced = {
            event.interrupt_id
            for event in runner.store.events(runner.run_id)
            if isinstance(event, InterruptRaised)
        }

    # -- the compiled graph's functions -------------------------------------------
    def recursion_limit(self) -> int:
        """Above our own bound: every step run, plus exit nodes and skips, per pass."""
        nodes = (
            len(self.scheduling.predecessors)
            + len(self.scheduling.conditional)
            + len(self.scheduling.gates)
        )
        bound = self.state.wf.limits.step_run_bound(len(self.state.wf.steps))
        return 2 * (bound + nodes) + 25

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
        update["goto"] = {}
        return update

    def node_for(self, step_id: str) -> NodeFunction:
        conditional = step_id in self.scheduling.conditional

        async def node(graph_state: GraphState) -> dict[str, Any]:
            # The state is the one this superstep started from: a stop decided by another
            # step of the same superstep does not stop this one, which had already started.
            touched, signal, goto = await self._run(step_id, halted=bool(graph_state.get("stop")))
            update = self.mirror(touched)
            if signal is not None:
                update["routes"] = {
                    step_id: {
                        "decision": signal.decision,
                        "target": signal.next_step_id,
                        "route": signal.route,
                    }
                }
            if conditional:
                update["goto"] = {step_id: goto}
            if self.state.stop_reason:
                update["stop"] = self.state.stop_reason
            return update

        node.__name__ = f"step_{step_id}"
        return node

    def route_for(self, step_id: str) -> Callable[[GraphState], Sequence[Hashable]]:
        exit_node = f"{step_id}{EXIT_SUFFIX}"

        def route(graph_state: GraphState) -> Sequence[Hashable]:
            if graph_state.get("stop"):
                return [END]
            return list(graph_state.get("goto", {}).get(step_id) or [exit_node])

        route.__name__ = f"route_{step_id}"
        return route

    async def _run(
        self, step_id: str, halted: bool
    ) -> tuple[list[str], RoutingSignal | None, list[str]]:
        """Settle ``step_id`` if it is still to settle; (steps changed, its route, where control goes back)."""
        runner = self.runner
        record = self.state.steps[step_id]
        if halted or self.state.limit_reason:
            return [step_id], None, []
        if record.status.settled:
            return [step_id], None, self._owed(step_id)
        readiness = runner.readiness(step_id)
        signal: RoutingSignal | None = None
        if readiness.action == "wait":
            raise CheckpointBehind(f"{step_id} was scheduled before its dependencies settled")
        if readiness.action == "run":
            try:
                outcome = await runner.run_step(
                    step_id, continuing=record.status == StepStatus.WAITING_HUMAN
                )
            except WaitingForHuman:
                runner.interrupts.mark_waiting(step_id)
                raise
            effects, signal = outcome.effects, outcome.signal
        else:
            effects = runner.settle_unrun(step_id, readiness)
        return [step_id, *effects.reset], signal, self._goto(step_id, effects, signal)

    def _goto(self, step_id: str, effects: RouteEffects, signal: RoutingSignal | None) -> list[str]:
        """Where a conditional step sends control back: the entry points of what it reset
        (a loop's target, a detour's declaring step) and the detour it started."""
        candidates = list(effects.reset)
        if signal is not None and signal.decision == "detour" and signal.next_step_id:
            candidates.append(signal.next_step_id)
        pending = {s for s in candidates if self.state.steps[s].status == StepStatus.PENDING}
        allowed = self.scheduling.back_targets.get(step_id, [])
        entries = [
            s for s in allowed if s in pending and not (self._step_predecessors[s] & pending)
        ]
        if signal is not None and signal.decision == "loop":
            entries += self.scheduling.loop_gates.get(step_id, [])
        return entries

    def _owed(self, step_id: str) -> list[str]:
        """Where a settled conditional step sends control when it is passed again (a resume
        from the store): to the target of the detour it started, or back to the step whose
        detour it was, when that one waits to run again."""
        if step_id not in self.scheduling.back_targets:
            return []
        steps = self.state.steps
        detour = self.state.active_detour
        if (
            detour is not None
            and detour.declared_by == step_id
            and steps[detour.target].status == StepStatus.PENDING
        ):
            return [detour.target]
        declarer = self.runner.graph.detour_declarer(step_id)
        if declarer is not None and detour is None and steps[declarer].status == StepStatus.PENDING:
            return [declarer]
        return []

    # -- interrupts ------------------------------------------------------------------
    def held_steps(self, step_id: str) -> list[str]:
        """The waiting step and every step ready to start that the held superstep keeps waiting."""
        runner = self.runner
        ready = [
            s
            for s in runner.graph.topological_order()
            if s != step_id
            and self.state.steps[s].status == StepStatus.PENDING
            and runner.readiness(s).action != "wait"
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
            if given is not None:
                store.record_answer(record.interrupt_id, given)
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
