"""Executing one step — everything both engines share, and no scheduling.

An engine decides *when* a step runs; :class:`StepRunner` does the rest:

* :meth:`StepRunner.readiness` — the trigger rule over the step's settled
  dependencies, and "not routed" when every router that could choose it chose
  something else;
* :meth:`StepRunner.run_step` — ``when``, inputs (CEL, then the step's pydantic
  input model), the interrupt before, the implementation with its timeout and
  retries, output validation with one repair attempt when the answer came from
  a model, the interrupt after, the routing decision (tie-breaker and human
  escalation included), and then, in one store batch, the step's result, its
  events and the effects of its route (targets skipped, a loop's steps reset
  with their history kept, a detour started or returned, termination);
* :meth:`StepRunner.ask` — every step's interrupts: the stored answer, else
  the engine's pause (LangGraph's ``interrupt()``), else answers given ahead or
  the responder, else the step waits;
* :meth:`StepRunner.conclude` — completion criteria and the run's final status.

Every state change is written to the run store before the engine acts on it,
so a run resumes from the store alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ValidationError

from engine import routing
from engine.conditions import CelEvaluationError, build_activation, compile_expr, evaluate_bool
from engine.context import (
    BudgetExceeded,
    InterruptAnswer,
    InterruptRequest,
    StepContext,
    StepServices,
)
from engine.events import (
    Budget,
    Domain,
    InterruptRaised,
    InterruptResolved,
    RouteDecided,
    RunEvent,
    StepFailed,
    StepFinished,
    StepRetrying,
    StepSkipped,
    StepStarted,
)
from engine.graph import WorkflowGraph
from engine.journal import StoreJournal
from engine.protocol import RunContext, TieBreakAnswer
from engine.run_state import ActiveDetour, RunState, StepRecord
from engine.states import RoutingSignal, RunStatus, StepStatus
from engine.steps import REGISTRY, RegisteredStep, StepRegistry
from engine.store import BaseRunStore, InterruptRecord

_FAILED = (StepStatus.FAILED, StepStatus.UPSTREAM_FAILED)

Sleep = Callable[[float], Awaitable[None]]

_Event = TypeVar("_Event", bound=RunEvent)

AnswerPause = Callable[[InterruptRecord], Awaitable[InterruptAnswer]]
"""Engine-supplied: pause a step until a person answers its recorded interrupt.

Returns the answer, or raises (a subclass of) :class:`WaitingForHuman` when the
engine stops the run to wait. An engine that pauses steps itself announces the
interrupts itself, with the steps the pause holds (LangGraph: the superstep).
"""


class WaitingForHuman(Exception):
    """Nobody is there to answer an interrupt: the step waits, the run may go WAITING."""

    def __init__(self, interrupt_id: str, step_id: str) -> None:
        super().__init__(f"{step_id} waits for an answer to {interrupt_id}")
        self.interrupt_id = interrupt_id
        self.step_id = step_id


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


@dataclass
class RouteEffects:
    """What a settled step changed besides itself; the scheduler looks at these steps next."""

    reset: list[str] = field(default_factory=list)
    """Steps back to PENDING (a loop's body, a detour target run again, a detour's return)."""
    terminate: bool = False


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
            return Readiness("upstream_failed", "no dependency succeeded (one_success)")
        return Readiness("skip", "every dependency was skipped")
    if failed:
        return Readiness("upstream_failed", "a dependency failed")
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
        pause: AnswerPause | None = None,
    ) -> None:
        self.state = state
        self.graph = graph
        self.store = store
        self.run = run
        self.engine_name = engine_name
        self.registry = registry
        self.sleep = sleep
        self._pause = pause
        """None: the run's answers or responder answer, else the step waits (the Kahn engine)."""
        self.services = StepServices(
            journal=StoreJournal(store, run.replay_from),
            budget=state.budget,
            ask=self.ask,
            emit_domain=self._emit_domain,
            emit_event=self.emit,
            model=run.model,
            retriever=run.retriever,
            extras=run.extras,
        )
        self._order = {step_id: index for index, step_id in enumerate(graph.topological_order())}
        self._dependencies = {step_id: graph.dependencies(step_id) for step_id in state.steps}
        self._routers = {step_id: graph.routers_of(step_id) for step_id in state.steps}
        self._visible: dict[str, list[str]] = {}
        self._step_bound = state.wf.limits.step_run_bound(len(state.wf.steps))

    # -- events and persistence ----------------------------------------------
    @property
    def run_id(self) -> str:
        return self.state.run_id

    def emit(self, event: _Event) -> _Event:
        """Store ``event`` (committed before anyone sees it); returns it stamped."""
        return cast(_Event, self.store.append(event))

    def _emit_domain(self, name: str, payload: dict[str, Any], step_id: str | None) -> None:
        self.emit(Domain(run_id=self.run_id, name=name, payload=payload, step_id=step_id))

    def save(self, record: StepRecord) -> None:
        self.store.save_step(self.run_id, record.result())

    def save_engine_state(self) -> None:
        self.store.save_engine_state(self.run_id, self.state.engine_state())

    def emit_budget(self) -> None:
        state = self.state
        self.emit(
            Budget(
                run_id=self.run_id,
                step_runs=state.step_runs,
                llm_calls=state.budget.llm_calls,
                tokens=state.budget.tokens,
                max_step_runs=self._step_bound,
                max_llm_calls=state.budget.max_llm_calls,
                token_budget=state.budget.token_budget,
                elapsed_s=round(state.elapsed_s, 6),
            )
        )

    # -- readiness -------------------------------------------------------------
    def dependencies(self, step_id: str) -> list[str]:
        return self._dependencies[step_id]

    def dependents(self, step_id: str) -> list[str]:
        return self.graph.dependents(step_id)

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
            statuses.append(status)
        record = steps[step_id]
        routers = [r for r in self._routers[step_id] if steps[r].status == StepStatus.SUCCEEDED]
        if routers and not record.routed_by.intersection(routers):
            return Readiness("skip", f"not routed (by {', '.join(routers)})")
        return trigger_readiness(record.spec.trigger, statuses)

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
                self.emit(
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
                self._skip(record, readiness.reason)
            self.save(record)
            self._after_settle(record, effects)
        return effects

    def settle_stopped(self, step_id: str, reason: str) -> None:
        """Skip a step the run's stop cut off (cancelled, a limit, a termination)."""
        self.settle_unrun(step_id, Readiness("skip", f"run stopped: {reason}"))

    def _skip(self, record: StepRecord, reason: str) -> None:
        record.settle(StepStatus.SKIPPED, reason=reason)
        self.emit(
            StepSkipped(
                run_id=self.run_id,
                step_id=record.step_id,
                iteration=record.iteration,
                reason=reason,
            )
        )

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
        return self.state.step_runs >= self._step_bound

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
        if not continuing and self.step_limit_reached():
            state.limit_reason = f"max_step_runs {self._step_bound} reached"
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
        record.status = StepStatus.RUNNING
        record.reason = ""
        record.changed()
        with self.store.batch():
            self.save(record)
            if not continuing:
                self.emit(
                    StepStarted(
                        run_id=self.run_id,
                        step_id=step_id,
                        iteration=record.iteration,
                        attempt=1,
                        inputs=inp.model_dump(mode="json"),
                    )
                )
        started = time.monotonic()
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
            signal = await self._route(record, outputs, ctx)
        except BudgetExceeded as error:
            state.limit_reason = str(error)
            return self._settle_failed(record, f"limit reached: {error}")
        except StepError as error:
            return self._settle_failed(record, str(error))
        return self._settle_succeeded(record, outputs, signal, ctx, time.monotonic() - started)

    def upstream_outputs(self, step_id: str) -> dict[str, dict[str, Any]]:
        """Outputs of every step ``step_id`` can see that has produced some, farthest first."""
        steps = self.state.steps
        return {
            visible_id: steps[visible_id].outputs
            for visible_id in self.visible(step_id)
            if steps[visible_id].status == StepStatus.SUCCEEDED or steps[visible_id].history
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
        attempt = 1
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
                self.emit(
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
                self.emit(
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
            self._skip(record, reason)
            self.save(record)
            effects = RouteEffects()
            self._after_settle(record, effects)
            self.save_engine_state()
        return StepOutcome(record.step_id, record.status, effects=effects)

    def _settle_failed(
        self, record: StepRecord, error: str, *, started: bool = True
    ) -> StepOutcome:
        with self.store.batch():
            record.settle(StepStatus.FAILED, reason=error)
            self.save(record)
            self.emit(
                StepFailed(
                    run_id=self.run_id,
                    step_id=record.step_id,
                    iteration=record.iteration,
                    error=error,
                    optional=record.spec.optional,
                )
            )
            effects = RouteEffects()
            self._after_settle(record, effects)
            self.save_engine_state()
            if started:
                self.emit_budget()
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
            self.save(record)
            self.emit(
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
                )
            )
            if signal is not None:
                self.emit(
                    RouteDecided(
                        run_id=self.run_id,
                        step_id=record.step_id,
                        iteration=record.iteration,
                        signal=signal,
                    )
                )
                self._apply_route(record, signal, effects)  # saves every step it changes
            self._after_settle(record, effects)
            self.save_engine_state()
            self.emit_budget()
        return StepOutcome(record.step_id, StepStatus.SUCCEEDED, signal=signal, effects=effects)

    def _after_settle(self, record: StepRecord, effects: RouteEffects) -> None:
        """A settled detour target returns to the step that declared the detour."""
        detour = self.state.active_detour
        if detour is None or detour.target != record.step_id:
            return
        self.state.active_detour = None
        self.state.returned_detours.add(detour.declared_by)
        declarer = self.state.steps[detour.declared_by]
        declarer.reset()
        self.save(declarer)
        effects.reset.append(declarer.step_id)

    # -- routing -------------------------------------------------------------------
    def _needs_decision(self, record: StepRecord, outputs: dict[str, Any]) -> bool:
        detour = self.state.active_detour
        return (
            record.spec.routing is not None
            or outputs.get("terminate") is True
            or (detour is not None and detour.target == record.step_id)
        )

    async def _route(
        self, record: StepRecord, outputs: dict[str, Any], ctx: StepContext
    ) -> RoutingSignal | None:
        """ADR-004 routing for a step that just produced ``outputs`` (engine/routing.py decides)."""
        if not self._needs_decision(record, outputs):
            return None
        state = self.state
        detour = state.active_detour
        decision = routing.decide(
            routing.RouteInput(
                step=record.spec,
                outputs=outputs,
                activation=self.activation(record, outputs),
                loop_count=state.loop_counts.get(record.step_id, 0),
                active_detour=detour.declared_by if detour else None,
                returning_from_detour=record.step_id in state.returned_detours,
                step_runs=state.step_runs,
                max_step_runs=self._step_bound,
            ),
            self.graph,
        )
        if isinstance(decision, RoutingSignal):
            return decision
        answer = await self._ask_tie_breaker(decision, ctx)
        settled = routing.settle_tie_break(decision, answer)
        if isinstance(settled, RoutingSignal):
            return settled
        human = await ctx.interrupt(settled.interrupt_request())
        return routing.settle_human_tie_break(settled, settled.chosen_target(human))

    async def _ask_tie_breaker(
        self, need: routing.TieBreakNeeded, ctx: StepContext
    ) -> TieBreakAnswer:
        """The injected tie-breaker's answer, journaled like a model call; never raises."""
        tie_breaker = self.run.tie_breaker
        request = need.request(self.run_id, context=ctx.context())

        async def call() -> TieBreakAnswer:
            if tie_breaker is None:
                return TieBreakAnswer(
                    target=None, outcome="error", reasoning="no tie-breaker is configured"
                )
            try:
                return await asyncio.wait_for(tie_breaker(request), timeout=need.timeout_s)
            except TimeoutError:
                return TieBreakAnswer(target=None, outcome="timeout")
            except Exception as error:  # noqa: BLE001 - ADR-004: any tie-breaker failure falls back to the default edge
                return TieBreakAnswer(
                    target=None, outcome="error", reasoning=_describe(error, None)
                )

        answer, _ = await ctx.journaled(
            "tie_breaker",
            call,
            encode=lambda a: a.model_dump(mode="json"),
            decode=TieBreakAnswer.model_validate,
        )
        return answer

    def _apply_route(
        self, record: StepRecord, signal: RoutingSignal, effects: RouteEffects
    ) -> None:
        """Change the run by a decision: loops reset, detours start, termination.

        Targets not chosen need nothing here: they are skipped "not routed"
        by :meth:`readiness` when the scheduler looks at them next.
        """
        state = self.state
        step_id = record.step_id
        state.returned_detours.discard(step_id)
        for target in signal.skipped_targets:
            state.steps[target].not_routed_by.add(step_id)
            self.save(state.steps[target])
        if signal.decision == "terminate":
            effects.terminate = True
            if signal.run_status == RunStatus.PARTIAL:
                state.limit_reason = signal.reason
            else:
                state.terminated_by = step_id
            return
        target = signal.next_step_id
        if target is None:
            return
        if signal.decision == "loop":
            state.loop_counts[step_id] = state.loop_counts.get(step_id, 0) + 1
            body = self.graph.between(target, step_id)
            for reset_id in body:
                reset = state.steps[reset_id]
                reset.reset(routers_reset=set(body))
                self.save(reset)
            effects.reset.extend(body)
            return
        if (
            signal.return_to is not None
            and target == signal.return_to
            and signal.decision == "advance"
        ):
            return
        chosen = state.steps[target]
        if chosen.status.settled:
            chosen.reset(routers_reset={step_id})
            effects.reset.append(target)
        chosen.routed_by.add(step_id)
        chosen.not_routed_by.discard(step_id)
        chosen.changed()
        self.save(chosen)
        if signal.decision == "detour" and signal.return_to is not None:
            state.active_detour = ActiveDetour(declared_by=step_id, target=target)

    # -- interrupts ------------------------------------------------------------------
    async def ask(
        self, interrupt_id: str, request: InterruptRequest, ctx: StepContext
    ) -> InterruptAnswer:
        """Every step's interrupt asker: a stored answer, else the engine's pause, else
        answers given ahead or the responder — or the step waits."""
        record = self.state.steps[ctx.step_id]
        stored = self.store.get_interrupt(interrupt_id)
        if stored is not None and stored.answer is not None:
            if stored.status != "resolved":
                self._resolve(stored, stored.answer, record)
            return stored.answer
        raised: InterruptRaised | None = None
        if stored is None:
            stored, raised = self._record_interrupt(interrupt_id, request, ctx, record)
        if self._pause is not None:
            answer = await self._pause(stored)
        else:
            answer = await self.answer_given(stored, raised or self.raised_event(stored))
            if answer is None:
                raise WaitingForHuman(stored.interrupt_id, stored.step_id)
        self._resolve(stored, answer, record)
        return answer

    def _record_interrupt(
        self, interrupt_id: str, request: InterruptRequest, ctx: StepContext, record: StepRecord
    ) -> tuple[InterruptRecord, InterruptRaised | None]:
        """Store a new interrupt with the step WAITING_HUMAN, announced in the same commit
        unless the engine pauses the step and announces it itself."""
        stored = InterruptRecord(
            interrupt_id=interrupt_id,
            run_id=self.run_id,
            step_id=ctx.step_id,
            iteration=ctx.iteration,
            request=request,
            created_ts=0.0,
        )
        raised: InterruptRaised | None = None
        with self.store.batch():
            record.status = StepStatus.WAITING_HUMAN
            record.changed()
            self.save(record)
            self.store.add_interrupt(stored)
            if self._pause is None:
                raised = self.emit(self.raised_event(stored))
        return stored, raised

    async def answer_given(
        self, stored: InterruptRecord, raised: InterruptRaised
    ) -> InterruptAnswer | None:
        """Answers given ahead (by interrupt id or step id), else the responder's; None when nobody answers."""
        answer = self.run.answers.get(stored.interrupt_id) or self.run.answers.get(stored.step_id)
        if answer is None and self.run.responder is not None:
            answer = await self.run.responder(raised, stored.request)
        return answer

    def raised_event(
        self, stored: InterruptRecord, held_steps: list[str] | None = None
    ) -> InterruptRaised:
        """``interrupt_raised`` for ``stored``; the pause holds ``held_steps`` (default: its own step)."""
        request = stored.request
        return InterruptRaised(
            run_id=self.run_id,
            interrupt_id=stored.interrupt_id,
            step_id=stored.step_id,
            iteration=stored.iteration,
            interrupt_kind=request.kind,
            prompt=request.prompt,
            payload=request.payload,
            options=request.options,
            held_steps=held_steps or [stored.step_id],
        )

    def _resolve(
        self, stored: InterruptRecord, answer: InterruptAnswer, record: StepRecord
    ) -> None:
        with self.store.batch():
            self.store.add_interrupt(
                stored.model_copy(update={"status": "resolved", "answer": answer})
            )
            self.emit(
                InterruptResolved(
                    run_id=self.run_id,
                    interrupt_id=stored.interrupt_id,
                    step_id=stored.step_id,
                    answer=answer.model_dump(mode="json"),
                    automatic=answer.automatic,
                )
            )
            record.status = StepStatus.RUNNING
            record.changed()
            self.save(record)

    def mark_waiting(self, step_id: str) -> None:
        record = self.state.steps[step_id]
        record.status = StepStatus.WAITING_HUMAN
        record.changed()
        self.save(record)

    # -- the end of a run ------------------------------------------------------------
    def evaluate_outputs(self) -> tuple[dict[str, Any], list[str]]:
        """The workflow's declared outputs, and the names that could not be evaluated."""
        outputs: dict[str, Any] = {}
        missing: list[str] = []
        if not self.state.wf.outputs:
            return outputs, missing
        activation = build_activation(
            inputs=self.state.inputs, steps=self.state.views(), run=self.state.counters()
        )
        for name, expr in self.state.wf.outputs.items():
            try:
                outputs[name] = compile_expr(expr).evaluate(activation)
            except CelEvaluationError:
                missing.append(name)
        return outputs, missing

    def conclude(self) -> tuple[RunStatus, str, list[str], dict[str, Any]]:
        """(status, reason, missing, outputs) of a run whose scheduling has ended.

        A limit → PARTIAL; a terminate decision → COMPLETED; a non-optional step
        that failed → FAILED; completion criteria not met → PARTIAL naming what
        is missing; otherwise COMPLETED.
        """
        state = self.state
        wf = state.wf
        outputs, unevaluated = self.evaluate_outputs()
        missing = [
            f"output {name}"
            for name in wf.completion.required_outputs
            if name in unevaluated or outputs.get(name) is None
        ]
        missing += [
            f"step {step_id}"
            for step_id in wf.completion.required_steps
            if state.steps[step_id].status != StepStatus.SUCCEEDED
        ]
        if state.limit_reason:
            return RunStatus.PARTIAL, state.limit_reason, missing, outputs
        if state.terminated_by:
            return RunStatus.COMPLETED, f"terminated by {state.terminated_by}", missing, outputs
        failed = [
            r for r in state.steps.values() if r.status == StepStatus.FAILED and not r.spec.optional
        ]
        if failed:
            first = failed[0]
            return (
                RunStatus.FAILED,
                f"step {first.step_id} failed: {first.reason}",
                missing,
                outputs,
            )
        if missing:
            return (
                RunStatus.PARTIAL,
                f"completion criteria not met, missing: {', '.join(missing)}",
                missing,
                outputs,
            )
        return RunStatus.COMPLETED, "", missing, outputs


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
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _note(answer: InterruptAnswer) -> str:
    return f" ({answer.note})" if answer.note else ""
