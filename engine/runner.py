"""Running one step — everything both engines share, and no scheduling.

An engine decides *when* a step runs; :class:`StepRunner` does the rest:

* :meth:`StepRunner.readiness` — the trigger rule over the step's settled
  dependencies, and "not routed" when every router that could choose it chose
  something else;
* :meth:`StepRunner.run_step` — ``when``, inputs (CEL, then the step's pydantic
  input model), the interrupt before, the implementation with its timeout and
  retries, output validation with one repair attempt when the answer came from
  a model, the interrupt after, the routing decision, and then, in one store
  batch, the step's result, its events and the effects of its route.

Its parts live beside it: the store writes in engine/recorder.py, interrupts in
engine/interrupts.py, routes in engine/route_application.py and the run's final
status in engine/completion.py. Every state change is written to the run store
before the engine acts on it, so a run resumes from the store alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ValidationError

from engine.conditions import CelEvaluationError, build_activation, compile_expr, evaluate_bool
from engine.context import (
    BudgetExceeded,
    InterruptAnswer,
    InterruptRequest,
    StepContext,
    StepServices,
)
from engine.errors import describe_exception
from engine.events import (
    RouteDecided,
    StepFailed,
    StepFinished,
    StepRetrying,
    StepStarted,
)
from engine.graph import WorkflowGraph
from engine.interrupts import AnswerPause, Interrupts, WaitingForHuman
from engine.journal import StoreJournal
from engine.model_answers import tally
from engine.protocol import RunContext
from engine.recorder import RunRecorder
from engine.route_application import RouteApplication, RouteEffects
from engine.run_state import RunState, StepRecord
from engine.states import RoutingSignal, StepStatus
from engine.steps import REGISTRY, RegisteredStep, StepRegistry
from engine.store import BaseRunStore

_FAILED = (StepStatus.FAILED, StepStatus.UPSTREAM_FAILED)

Sleep = Callable[[float], Awaitable[None]]

Clock = Callable[[], float]
"""Monotonic seconds: the engine's clock, which times each step's run (tests pin it)."""


class StepError(Exception):
    """A step failure the runner explains itself (bad input, rejected outputs, invalid outputs)."""


class UpstreamOutputs(Mapping[str, dict[str, Any]]):
    """``StepContext.upstream``, computed on first use.

    Most steps never read it, and collecting every visible step's outputs
    costs time proportional to the steps above it; laziness keeps the per-step
    overhead of a large run flat.
    """

    def __init__(self, collect: Callable[[], dict[str, dict[str, Any]]]) -> None:
        self._collect = collect
        self._outputs: dict[str, dict[str, Any]] | None = None

    def _data(self) -> dict[str, dict[str, Any]]:
        if self._outputs is None:
            self._outputs = self._collect()
        return self._outputs

    def __getitem__(self, step_id: str) -> dict[str, Any]:
        return self._data()[step_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())


@dataclass(frozen=True)
class Readiness:
    action: Literal["wait", "run", "skip", "upstream_failed"]
    reason: str = ""


WAIT = Readiness("wait")
RUN = Readiness("run")
UPSTREAM_FAILED = Readiness("upstream_failed")
"""Its reason is given where the step is settled: the failed dependencies, by name."""


@dataclass
class StepOutcome:
    step_id: str
    status: StepStatus
    signal: RoutingSignal | None = None
    effects: RouteEffects = field(default_factory=RouteEffects)


def trigger_readiness(rule: str, statuses: list[StepStatus]) -> Readiness:
    """Airflow's trigger rules over settled dependency statuses.

    Every rule is evaluated once all dependencies have settled (one_success and
    one_failed included): the outcome is the same as firing early, and the
    dependency order stays the canonical one both engines share.
    """
    if not statuses:
        return RUN
    succeeded = sum(s == StepStatus.SUCCEEDED for s in statuses)
    failed = sum(s in _FAILED for s in statuses)
    skipped = sum(s == StepStatus.SKIPPED for s in statuses)
    if rule == "all_done":
        return RUN
    if rule == "one_failed":
        return RUN if failed else Readiness("skip", "no dependency failed (one_failed)")
    if rule == "one_success":
        if succeeded:
            return RUN
        if failed:
            return UPSTREAM_FAILED
        return Readiness("skip", "every dependency was skipped")
    if failed:
        return UPSTREAM_FAILED
    if rule == "all_success":
        return RUN if skipped == 0 else Readiness("skip", "a dependency was skipped (all_success)")
    if rule == "none_failed":
        return RUN
    return RUN if succeeded else Readiness("skip", "every dependency was skipped")


class StepRunner:
    def __init__(
        self,
        *,
        state: RunState,
        graph: WorkflowGraph,
        store: BaseRunStore,
        run: RunContext,
        engine_name: str,
        registry: StepRegistry = REGISTRY,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        pause: AnswerPause | None = None,
    ) -> None:
        self.state = state
        self.graph = graph
        self.store = store
        self.engine_name = engine_name
        self.registry = registry
        self.sleep = sleep
        self.clock = clock
        self.recorder = RunRecorder(state, store)
        self.interrupts = Interrupts(self.recorder, run, pause)
        """``pause`` None: the run's answers or responder answer, else the step waits (Kahn)."""
        self.routes = RouteApplication(self.recorder, graph, run)
        self.services = StepServices(
            journal=StoreJournal(store, run.replay_from),
            budget=state.budget,
            ask=self.interrupts.ask,
            emit_domain=self.recorder.emit_domain,
            emit_event=self.recorder.emit,
            model=run.model,
            retriever=run.retriever,
            app=run.services,
            live=run.live,
            model_answers=lambda: tally(store.events(state.run_id)),
        )
        self._order = {step_id: index for index, step_id in enumerate(graph.topological_order())}
        self._dependencies = {step_id: graph.dependencies(step_id) for step_id in state.steps}
        self._routers = {step_id: graph.routers_of(step_id) for step_id in state.steps}
        self._visible: dict[str, list[str]] = {}
        self._loop_guards = _loop_guards(graph)
        self._guarded: dict[str, list[str]] = {}
        for guarded, routers in self._loop_guards.items():
            for router in routers:
                self._guarded.setdefault(router, []).append(guarded)
        for target in state.steps:  # a returning declarer releases its detour target's dependents
            declarer = graph.detour_declarer(target)
            if declarer is not None:
                waiting = [d for d in graph.dependents(target) if d != declarer]
                self._guarded.setdefault(declarer, []).extend(waiting)

    @property
    def run_id(self) -> str:
        return self.state.run_id

    # -- readiness -------------------------------------------------------------
    def followers(self, step_id: str) -> list[str]:
        """The steps whose readiness may change when ``step_id`` settles: its dependents,
        and, for a loop's router, the steps outside the loop that wait for its last pass."""
        return [*self.graph.dependents(step_id), *self._guarded.get(step_id, ())]

    def order_key(self, step_id: str) -> int:
        return self._order[step_id]

    def readiness(self, step_id: str) -> Readiness:
        """Whether a PENDING step can run now, must be skipped or failed, or must wait."""
        steps = self.state.steps
        detour = self.state.active_detour
        statuses: list[StepStatus] = []
        for dependency in self._dependencies[step_id]:
            status = steps[dependency].status
            if not status.settled:
                return WAIT
            if detour is not None and dependency == detour.declared_by and step_id != detour.target:
                return WAIT
            if self._awaits_return(step_id, dependency):
                return WAIT
            statuses.append(status)
        for router in self._loop_guards.get(step_id, ()):
            if not steps[router].status.settled:
                return WAIT
        record = steps[step_id]
        if step_id in self.state.stopped:
            return Readiness("skip", f"run stopped: {self.state.stopped[step_id]}")
        routers = [r for r in self._routers[step_id] if steps[r].status == StepStatus.SUCCEEDED]
        if routers and not record.routed_by.intersection(routers):
            return Readiness("skip", f"not routed (by {', '.join(routers)})")
        return trigger_readiness(record.spec.trigger, statuses)

    def _awaits_return(self, step_id: str, dependency: str) -> bool:
        """Whether ``dependency`` is a detour target whose declarer is running again: what the
        target leads to waits for the declarer's return pass, whose decision (terminate, route)
        may cut it off — so no engine's timing decides whether it runs first."""
        declarer = self.graph.detour_declarer(dependency)
        return (
            declarer is not None
            and declarer != step_id
            and declarer in self.state.returned_detours
            and not self.state.steps[declarer].status.settled
        )

    def settle_unrun(self, step_id: str, readiness: Readiness) -> RouteEffects:
        """Settle a step that will not run: skipped, or failed upstream."""
        record = self.state.steps[step_id]
        effects = RouteEffects()
        with self.store.batch():
            if readiness.action == "upstream_failed":
                failed = sorted(
                    d for d in self._dependencies[step_id] if self.state.steps[d].status in _FAILED
                )
                reason = f"upstream failed: {', '.join(failed)}" if failed else readiness.reason
                record.settle(StepStatus.UPSTREAM_FAILED, reason=reason)
                self.recorder.emit(
                    StepFailed(
                        run_id=self.run_id,
                        step_id=step_id,
                        iteration=record.iteration,
                        error=reason,
                        upstream=True,
                        optional=record.spec.optional,
                    )
                )
            else:
                self.recorder.skip(record, readiness.reason)
            self.recorder.save(record)
            self.routes.after_settle(record, effects)
        return effects

    def fail_unsettled(self, step_id: str, reason: str) -> None:
        """Fail a step a scheduler left unsettled at the end of a run (see lifecycle)."""
        self._settle_failed(self.state.steps[step_id], reason, started=False)

    def settle_stopped(self, step_id: str, reason: str) -> None:
        """Skip a step the run's stop cut off (cancelled, a limit, a termination)."""
        self.settle_unrun(step_id, Readiness("skip", f"run stopped: {reason}"))

    # -- activations -------------------------------------------------------------
    def activation(
        self, record: StepRecord, outputs: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return build_activation(
            inputs=self.state.inputs,
            steps=self.state.views(),
            outputs=outputs,
            iteration=record.iteration,
            run=self.state.counters(),
        )

    def visible(self, step_id: str) -> list[str]:
        """Steps whose outputs ``step_id`` sees in StepContext.upstream, farthest first.

        Its forward ancestors (always settled before it starts), and the steps
        downstream of it that a loop or detour brings back to it (their outputs
        are from an earlier pass). Steps that run concurrently with it are left
        out even when a back edge makes them visible: whether they have finished
        would depend on timing, and a run must not.
        """
        if step_id not in self._visible:
            graph = self.graph
            seen = set(graph.ancestors(step_id))
            if graph.has_cycles:
                seen |= graph.visible_from(step_id) & graph.descendants(step_id)
            self._visible[step_id] = sorted(seen, key=self._order.__getitem__)
        return self._visible[step_id]

    # -- running a step ----------------------------------------------------------
    def step_limit_reached(self) -> bool:
        return self.state.step_runs >= self.recorder.step_bound

    async def run_step(self, step_id: str, *, continuing: bool = False) -> StepOutcome:
        """Run one ready step to its settled state (or raise WaitingForHuman).

        ``continuing``: the step was started before in this process and is run
        again from its first line only to pick up an interrupt's answer (a
        LangGraph node resumed by ``Command(resume=...)``). It is the same start
        of the step, so it is neither counted nor announced again, and the step
        bound does not apply to it; its journaled calls replay.
        """
        state = self.state
        record = state.steps[step_id]
        spec = record.spec
        if step_id in state.answering:  # restored while waiting: its start is counted already
            state.answering.discard(step_id)
            continuing = True
        if not continuing and self.step_limit_reached():
            state.limit_reason = f"max_step_runs {self.recorder.step_bound} reached"
            return StepOutcome(step_id, record.status)
        if spec.when:
            matched, error = evaluate_bool(compile_expr(spec.when), self.activation(record))
            if not matched:
                reason = f"when is false: {spec.when}" + (f" ({error})" if error else "")
                return self._settle_skipped(record, reason)
        registered = self.registry.get(spec.uses)
        try:
            inp = self._inputs(record, registered)
        except StepError as error:
            return self._settle_failed(record, str(error), started=False)
        if not continuing:
            state.step_runs += 1
            record.runs += 1
            record.attempt = 1
        record.status = StepStatus.RUNNING
        record.reason = ""
        record.changed()
        with self.store.batch():
            self.recorder.save(record)
            if not continuing:
                self.recorder.emit(
                    StepStarted(
                        run_id=self.run_id,
                        step_id=step_id,
                        iteration=record.iteration,
                        attempt=1,
                        inputs=inp.model_dump(mode="json"),
                    )
                )
        started = self.clock()
        ctx = self._context(record, attempt=1)
        try:
            if spec.interrupt is not None and spec.interrupt.before:
                answer = await ctx.interrupt(
                    InterruptRequest(
                        kind=spec.interrupt.kind,
                        prompt=spec.interrupt.prompt,
                        payload={"inputs": inp.model_dump(mode="json"), "when": "before"},
                        options=["approve", "reject"],
                    )
                )
                if answer.action == "reject":
                    return self._settle_skipped(record, "rejected before running" + _note(answer))
            outputs, ctx = await self._attempts(record, registered, inp, ctx)
            if spec.interrupt is not None and spec.interrupt.after:
                outputs = await self._approve_outputs(record, registered, outputs, ctx)
            signal = await self.routes.decide(
                record, outputs, self.activation(record, outputs), ctx
            )
        except BudgetExceeded as error:
            state.limit_reason = str(error)
            return self._settle_failed(record, f"limit reached: {error}")
        except StepError as error:
            return self._settle_failed(record, str(error))
        return self._settle_succeeded(record, outputs, signal, ctx, self.clock() - started)

    def upstream_outputs(self, step_id: str) -> dict[str, dict[str, Any]]:
        """Outputs of every step ``step_id`` can see whose latest settled pass succeeded,
        farthest first (a pass skipped or failed hides what earlier passes produced)."""
        steps = self.state.steps
        return {
            visible_id: steps[visible_id].outputs
            for visible_id in self.visible(step_id)
            if steps[visible_id].status == StepStatus.SUCCEEDED or steps[visible_id].outputs
        }

    def _context(self, record: StepRecord, attempt: int, **extra: Any) -> StepContext:
        step_id = record.step_id
        upstream = UpstreamOutputs(lambda: self.upstream_outputs(step_id))
        return StepContext(
            run_id=self.run_id,
            spec=record.spec,
            iteration=record.iteration,
            attempt=attempt,
            services=self.services,
            upstream=upstream,  # type: ignore[arg-type]
            run_inputs=self.state.inputs,
            **extra,
        )

    def _inputs(self, record: StepRecord, registered: RegisteredStep) -> BaseModel:
        values: dict[str, Any] = {}
        if record.spec.inputs:
            activation = self.activation(record)
            for name, expr in record.spec.inputs.items():
                try:
                    values[name] = compile_expr(expr).evaluate(activation)
                except CelEvaluationError as error:
                    raise StepError(f"input {name!r} ({expr}): {error}") from None
        try:
            return registered.input_model.model_validate(values)
        except ValidationError as error:
            raise StepError(f"invalid inputs for {registered.name}: {_one_line(error)}") from None

    async def _attempts(
        self, record: StepRecord, registered: RegisteredStep, inp: BaseModel, ctx: StepContext
    ) -> tuple[dict[str, Any], StepContext]:
        """Call the implementation, retrying failures and repairing one invalid model answer."""
        spec = record.spec
        first_index = ctx.next_call_index
        attempt = record.attempt
        if attempt > 1:  # run again for an answer: the failed attempts are not repeated
            stats = ctx.stats
            ctx = self._context(record, attempt=attempt, first_call_index=first_index)
            ctx.stats = stats
        while True:
            try:
                return await self._call_with_repair(record, registered, inp, ctx), ctx
            except (WaitingForHuman, BudgetExceeded, StepError):
                raise
            except Exception as error:  # noqa: BLE001 - any failure of the implementation is the step's failure
                message = _describe(error, spec.timeout_s)
                if attempt > spec.retries:
                    raise StepError(message) from None
                attempt += 1
                record.attempt = attempt
                self.recorder.emit(
                    StepRetrying(
                        run_id=self.run_id,
                        step_id=record.step_id,
                        iteration=record.iteration,
                        attempt=attempt,
                        error=message,
                        delay_s=spec.retry_delay_s,
                    )
                )
                if spec.retry_delay_s:
                    await self.sleep(spec.retry_delay_s)
                self.recorder.emit(
                    StepStarted(
                        run_id=self.run_id,
                        step_id=record.step_id,
                        iteration=record.iteration,
                        attempt=attempt,
                    )
                )
                stats = ctx.stats
                ctx = self._context(record, attempt=attempt, first_call_index=first_index)
                ctx.stats = stats

    async def _call_with_repair(
        self, record: StepRecord, registered: RegisteredStep, inp: BaseModel, ctx: StepContext
    ) -> dict[str, Any]:
        try:
            return _coerce_outputs(registered, await self._call(record, registered, inp, ctx))
        except ValidationError as error:
            if ctx.stats.llm_calls == 0:
                raise StepError(
                    f"invalid outputs from {registered.name}: {_one_line(error)}"
                ) from None
            first_error = _one_line(error)
        repair = self._context(
            record,
            attempt=ctx.attempt,
            repair_error=first_error,
            first_call_index=ctx.next_call_index,
        )
        repair.stats = ctx.stats
        try:
            return _coerce_outputs(registered, await self._call(record, registered, inp, repair))
        except ValidationError as error:
            raise StepError(
                f"invalid outputs from {registered.name} after one repair attempt: {_one_line(error)}"
            ) from None

    async def _call(
        self, record: StepRecord, registered: RegisteredStep, inp: BaseModel, ctx: StepContext
    ) -> Any:
        timeout = record.spec.timeout_s
        if timeout is None:
            return await registered.function(ctx, inp)
        async with asyncio.timeout(timeout):
            return await registered.function(ctx, inp)

    async def _approve_outputs(
        self,
        record: StepRecord,
        registered: RegisteredStep,
        outputs: dict[str, Any],
        ctx: StepContext,
    ) -> dict[str, Any]:
        spec = record.spec.interrupt
        assert spec is not None
        answer = await ctx.interrupt(
            InterruptRequest(
                kind=spec.kind,
                prompt=spec.prompt,
                payload={"outputs": outputs, "when": "after"},
                options=["approve", "reject", "edit"],
            )
        )
        if answer.action == "reject":
            raise StepError("outputs rejected" + _note(answer))
        if answer.action == "edit":
            edited = answer.value if isinstance(answer.value, dict) else {}
            try:
                return _coerce_outputs(registered, {**outputs, **edited})
            except ValidationError as error:
                raise StepError(f"edited outputs are invalid: {_one_line(error)}") from None
        return outputs

    # -- settling ----------------------------------------------------------------
    def _settle_skipped(self, record: StepRecord, reason: str) -> StepOutcome:
        with self.store.batch():
            self.recorder.skip(record, reason)
            self.recorder.save(record)
            effects = RouteEffects()
            self.routes.after_settle(record, effects)
            self.recorder.save_engine_state()
        return StepOutcome(record.step_id, record.status, effects=effects)

    def _settle_failed(
        self, record: StepRecord, error: str, *, started: bool = True
    ) -> StepOutcome:
        with self.store.batch():
            record.settle(StepStatus.FAILED, reason=error)
            self.recorder.save(record)
            self.recorder.emit(
                StepFailed(
                    run_id=self.run_id,
                    step_id=record.step_id,
                    iteration=record.iteration,
                    error=error,
                    optional=record.spec.optional,
                )
            )
            effects = RouteEffects()
            self.routes.after_settle(record, effects)
            self.recorder.save_engine_state()
            if started:
                self.recorder.emit_budget()
        return StepOutcome(record.step_id, record.status, effects=effects)

    def _settle_succeeded(
        self,
        record: StepRecord,
        outputs: dict[str, Any],
        signal: RoutingSignal | None,
        ctx: StepContext,
        duration_s: float,
    ) -> StepOutcome:
        stats = ctx.stats
        effects = RouteEffects()
        with self.store.batch():
            record.settle(StepStatus.SUCCEEDED, outputs=outputs)
            self.recorder.save(record)
            self.recorder.emit(
                StepFinished(
                    run_id=self.run_id,
                    step_id=record.step_id,
                    iteration=record.iteration,
                    outputs=outputs,
                    duration_s=round(duration_s, 6),
                    llm_calls=stats.llm_calls,
                    tokens=stats.tokens,
                    providers=stats.providers,
                    replayed_calls=stats.replayed,
                    fallback_calls=stats.fallback_calls,
                )
            )
            if signal is not None:
                self.recorder.emit(
                    RouteDecided(
                        run_id=self.run_id,
                        step_id=record.step_id,
                        iteration=record.iteration,
                        signal=signal,
                    )
                )
                self.routes.apply(record, signal, effects)  # saves every step it changes
            self.routes.after_settle(record, effects)
            self.recorder.save_engine_state()
            self.recorder.emit_budget()
        return StepOutcome(record.step_id, StepStatus.SUCCEEDED, signal=signal, effects=effects)


def _coerce_outputs(registered: RegisteredStep, value: Any) -> dict[str, Any]:
    model = registered.output_model
    if isinstance(value, model):
        return value.model_dump(mode="json")
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if value is None:
        value = {}
    return model.model_validate(value).model_dump(mode="json")


def _one_line(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "(root)"
        parts.append(f"{where}: {item.get('msg', '')}")
    more = len(error.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _describe(error: BaseException, timeout_s: float | None) -> str:
    if isinstance(error, TimeoutError):
        return f"timed out after {timeout_s:g} s" if timeout_s else "timed out"
    return describe_exception(error)


def _note(answer: InterruptAnswer) -> str:
    return f" ({answer.note})" if answer.note else ""


def _loop_guards(graph: WorkflowGraph) -> dict[str, list[str]]:
    """Per step outside a loop that depends on a step of the loop's body, the loop routers
    it waits for: it runs once, after the loop's last pass, and sees that pass's outputs.

    Candidates are taken in topological order of the waiting step, then loop by loop; one
    that would close a cycle of waits (two loops sharing body steps in parallel branches,
    each router outside the other's body; a detour target waiting for a router that waits
    for the detour's return) is left out, so nothing waits forever.
    """
    order = graph.topological_order()
    bodies = [
        (edge.source, set(graph.between(edge.target, edge.source))) for edge in graph.loop_edges
    ]
    waits = nx.DiGraph()
    waits.add_nodes_from(order)
    for step in order:
        for dependency in graph.dependencies(step):
            waits.add_edge(dependency, step)
    for edge in graph.detour_edges:  # the declarer's dependents wait for its detour's return
        for dependent in graph.dependents(edge.target):
            if dependent != edge.source:
                waits.add_edge(edge.source, dependent)
    guards: dict[str, list[str]] = {}
    for step in order:
        for router, body in bodies:
            if step in body:  # the router included
                continue
            if not body.intersection(graph.dependencies(step)):
                continue
            if nx.has_path(waits, step, router):
                continue  # waiting would close a cycle
            waits.add_edge(router, step)
            guards.setdefault(step, []).append(router)
    return guards
