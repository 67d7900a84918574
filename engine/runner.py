"""Running one step — everything both engines share, and no scheduling.

An engine decides *when* a step runs; :class:`StepRunner` does the rest:

* :attr:`StepRunner.rules` — whether a step may run (engine/readiness.py);
* :meth:`StepRunner.begin` — ``when``, inputs (CEL, then the step's pydantic
  input model) and the start, synchronously, in the caller's store batch;
* :meth:`StepRunner.execute` — the interrupt before, the implementation with its
  timeout and retries, output validation with one repair attempt when the answer
  came from a model, the interrupt after, the routing decision; it returns what
  settles the step: in one store batch, the step's result, its events and the
  effects of its route (the Kahn engine starts what follows in that batch too);
* :meth:`StepRunner.run_step` — the three in turn.

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
from functools import partial
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from engine.conditions import CelEvaluationError, compile_expr, evaluate_bool
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
from engine.readiness import FAILED, Readiness, ReadinessRules
from engine.recorder import RunRecorder
from engine.route_application import RouteApplication, RouteEffects
from engine.run_state import RunState, StepRecord
from engine.states import RoutingSignal, StepStatus
from engine.steps import REGISTRY, RegisteredStep, StepRegistry
from engine.store import BaseRunStore
from engine.trusted import json_data, validated

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


@dataclass
class StepOutcome:
    step_id: str
    status: StepStatus
    signal: RoutingSignal | None = None
    effects: RouteEffects = field(default_factory=RouteEffects)


class BegunStep(NamedTuple):
    """A step :meth:`StepRunner.begin` started: counted, RUNNING, announced. (A named tuple:
    one is made per step, at a quarter of a frozen dataclass's cost.)"""

    record: StepRecord
    registered: RegisteredStep
    inp: BaseModel


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
        state.start_clock(clock)
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
        self.rules = ReadinessRules(state, graph)
        """When each step may run (engine/readiness.py)."""
        self._visible: dict[str, list[str]] = {}

    @property
    def run_id(self) -> str:
        return self.state.run_id

    # -- steps that do not run ------------------------------------------------
    def settle_unrun(self, step_id: str, readiness: Readiness) -> RouteEffects:
        """Settle a step that will not run: skipped, or failed upstream."""
        record = self.state.steps[step_id]
        effects = RouteEffects()
        with self.store.batch():
            if readiness.action == "upstream_failed":
                failed = sorted(
                    d
                    for d in self.rules.dependencies[step_id]
                    if self.state.steps[d].status in FAILED
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
        return self.state.activation(outputs, record.iteration)

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
            self._visible[step_id] = sorted(seen, key=self.rules.order_key)
        return self._visible[step_id]

    # -- the run's limits --------------------------------------------------------
    async def time_limit(self) -> None:
        """Return once the run's ``timeout_s`` is used up on the engine's clock, which times
        everything else about the run too. The event loop's timer wakes it; a clock the loop
        does not follow (a test's, moved by hand) is read again at every step's start
        instead (:meth:`begin`), where a run out of time starts nothing more."""
        while (remaining := self.state.remaining_s) > 0:
            await asyncio.sleep(remaining)

    # -- running a step ----------------------------------------------------------
    async def run_step(self, step_id: str, *, continuing: bool = False) -> StepOutcome:
        """Run one ready step to its settled state (or raise WaitingForHuman):
        :meth:`begin`, :meth:`execute`, and the settling it returns.

        ``continuing``: the step was started before in this process and is run
        again from its first line only to pick up an interrupt's answer (a
        LangGraph node resumed by ``Command(resume=...)``). It is the same start
        of the step, so it is neither counted nor announced again, and the step
        bound does not apply to it; its journaled calls replay.
        """
        begun = self.begin(step_id, continuing=continuing)
        if isinstance(begun, StepOutcome):
            return begun
        settle = await self.execute(begun)
        return settle()

    def begin(self, step_id: str, *, continuing: bool = False) -> BegunStep | StepOutcome:
        """Start a ready step, synchronously: ``when``, its inputs, the count and
        ``step_started`` — written in the store batch it is called in, so a scheduler
        starts the steps a settled step made ready in that step's own transaction.

        A StepOutcome when the step does not start: skipped by ``when``, failed on its
        inputs, or still PENDING when the step bound or ``timeout_s`` stops the run.
        """
        state = self.state
        record = state.steps[step_id]
        spec = record.spec
        if step_id in state.answering:  # restored while waiting: its start is counted already
            state.answering.discard(step_id)
            continuing = True
        if not continuing and state.step_runs >= self.recorder.step_bound:
            state.limit_reason = f"max_step_runs {self.recorder.step_bound} reached"
            return StepOutcome(step_id, record.status)
        if state.remaining_s <= 0:
            state.time_out()
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
            self.recorder.save_own(record)
            if not continuing:
                self.recorder.emit_new(
                    StepStarted,
                    run_id=state.run_id,
                    step_id=step_id,
                    iteration=record.iteration,
                    attempt=1,
                    inputs=json_data(inp),
                )
        return BegunStep(record, registered, inp)

    async def execute(self, begun: BegunStep) -> Callable[[], StepOutcome]:
        """Run a begun step — the interrupt before, the implementation with its retries and
        repair, the interrupt after, the routing decision — and return what settles it:
        call that at once (no ``await`` between), in the store batch that is to hold the
        step's result; the scheduler adds the start of what follows to that batch."""
        record, registered, inp = begun.record, begun.registered, begun.inp
        spec = record.spec
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
                    reason = "rejected before running" + _note(answer)
                    return partial(self._settle_skipped, record, reason)
            outputs, ctx = await self._attempts(record, registered, inp, ctx)
            if spec.interrupt is not None and spec.interrupt.after:
                outputs = await self._approve_outputs(record, registered, outputs, ctx)
            signal = None
            if self.routes.needs_decision(record, outputs):
                signal = await self.routes.decide(
                    record, outputs, partial(self.activation, record), ctx
                )
        except BudgetExceeded as error:
            self.state.limit_reason = str(error)
            return partial(self._settle_failed, record, f"limit reached: {error}")
        except StepError as error:
            return partial(self._settle_failed, record, str(error))
        duration_s = self.clock() - started
        return partial(self._settle_succeeded, record, outputs, signal, ctx, duration_s)

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
            run_id=self.state.run_id,
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
            return validated(registered.input_model, values)
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

    def _call(
        self, record: StepRecord, registered: RegisteredStep, inp: BaseModel, ctx: StepContext
    ) -> Awaitable[Any]:
        """The implementation's call, within the step's ``timeout_s`` if it has one."""
        timeout = record.spec.timeout_s
        if timeout is None:
            return registered.function(ctx, inp)
        return _within(timeout, registered.function(ctx, inp))

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
            if started:
                self.recorder.save_counters()
            else:
                self.recorder.save_engine_state()
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
            self.recorder.save_own(record)
            self.recorder.emit_new(  # the step's validated outputs and its counters
                StepFinished,
                run_id=self.state.run_id,
                step_id=record.step_id,
                iteration=record.iteration,
                outputs=outputs,
                duration_s=round(float(duration_s), 6),
                llm_calls=int(stats.llm_calls),
                tokens=int(stats.tokens),
                providers=list(map(str, stats.providers)),
                replayed_calls=int(stats.replayed),
                fallback_calls=int(stats.fallback_calls),
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
            self.recorder.save_counters()
        return StepOutcome(record.step_id, StepStatus.SUCCEEDED, signal=signal, effects=effects)


async def _within(timeout_s: float, call: Awaitable[Any]) -> Any:
    async with asyncio.timeout(timeout_s):
        return await call


def _coerce_outputs(registered: RegisteredStep, value: Any) -> dict[str, Any]:
    model = registered.output_model
    if isinstance(value, model):
        return json_data(value)
    if isinstance(value, BaseModel):
        value = json_data(value)
    if value is None:
        value = {}
    return json_data(validated(model, value))


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
