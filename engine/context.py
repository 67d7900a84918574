"""What a running step can do (DESIGN §5): ``StepContext``.

Every call that reaches outside the step — a model call, a retrieval, a
person's answer — goes through :meth:`StepContext.journaled`, which records it
in the call journal keyed by (run, step, iteration, call index). A step that
runs again (resume after an interrupt, after a crash, in a fork, or as the
second engine of a shadow run) gets the journaled answers back instead of
calling out again. That one mechanism is how "the model call happens exactly
once" holds on both engines.

The engine knows nothing of the router or of research: models and retrievers
arrive as the small protocols below, which the application (tui) adapts.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import Field

from engine.live import LiveChannel, ModelOutputSink, OutputCoalescer
from engine.model_answers import ModelAnswers
from engine.services import ServiceRegistry
from engine.spec import StepSpec
from plumbing.frozen import Frozen
from plumbing.retriever import Retriever


class ModelCaller(Protocol):
    """How steps reach a language model; the application adapts its router to this."""

    async def complete(self, request: Any, step: StepInfo) -> Any: ...

    def encode(self, response: Any) -> dict[str, Any]:
        """A JSON-able form of a response, for the journal."""
        ...

    def decode(self, request: Any, data: dict[str, Any]) -> Any:
        """Rebuild a response from its journaled form (the request gives its schema)."""
        ...

    def usage(self, response: Any) -> CallUsage: ...


@runtime_checkable
class StreamingModelCaller(ModelCaller, Protocol):
    """A model caller that can also stream: partial text goes to ``sink`` as it arrives
    (``engine.live``); the returned response is the answer, as from ``complete``."""

    async def stream(self, request: Any, step: StepInfo, sink: ModelOutputSink) -> Any: ...


class CallUsage(Frozen):
    tokens: int = 0
    provider: str = ""
    degraded: bool = False
    cost_usd: float = 0.0
    fallback: bool = False
    """The offline built-in model answered although remote providers are configured."""


class StepInfo(Frozen):
    run_id: str
    step_id: str
    iteration: int
    tier: int | None = None
    profile: str | None = None


class InterruptRequest(Frozen):
    """What a step asks a person. ``interrupt_id`` is stable across re-runs."""

    kind: Literal["approval", "input", "tie_breaker", "delivery"] = "approval"
    prompt: str
    payload: dict[str, Any] = Field(default_factory=dict)
    options: list[str] = Field(default_factory=list)
    default: InterruptAnswer | None = None
    """What headless ``--on-interrupt default`` answers (approve when unset)."""


class InterruptAnswer(Frozen):
    action: Literal["approve", "reject", "edit", "choose", "answer"] = "approve"
    value: Any = None
    """Edited outputs for ``edit``, the chosen target for ``choose``, text for ``answer``."""
    automatic: bool = False
    note: str = ""


class JournalEntry(Frozen):
    kind: str
    payload: Any


class Journal(Protocol):
    """The call journal (engine/journal.py implements it on the run store)."""

    def get(self, run_id: str, step_id: str, iteration: int, index: int) -> JournalEntry | None: ...

    def put(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None: ...


InterruptAsker = Callable[[str, InterruptRequest, "StepContext"], Awaitable[InterruptAnswer]]
"""Engine-supplied: (interrupt_id, request, ctx) -> the person's answer.

The Kahn engine waits on a future the UI resolves (or suspends the run when
nobody is there); the LangGraph engine calls ``langgraph.types.interrupt``.
"""

DomainEmitter = Callable[[str, dict[str, Any], str | None], None]
"""(namespaced name, payload, step id) -> appends a ``domain`` run event."""


class BudgetExceeded(Exception):
    """A run limit (LLM calls, tokens) would be crossed by this call."""


@dataclass
class RunBudget:
    """Counters shared by every step of one run; limits end the run PARTIAL."""

    max_llm_calls: int
    token_budget: int
    llm_calls: int = 0
    tokens: int = 0
    max_cost_usd: float | None = None
    cost_usd: float = 0.0

    @property
    def remaining_tokens(self) -> int:
        return max(0, self.token_budget - self.tokens)

    @property
    def remaining_llm_calls(self) -> int:
        return max(0, self.max_llm_calls - self.llm_calls)

    def check_call(self) -> None:
        if self.llm_calls >= self.max_llm_calls:
            raise BudgetExceeded(f"max_llm_calls {self.max_llm_calls} reached")
        if self.tokens >= self.token_budget:
            raise BudgetExceeded(f"token_budget {self.token_budget} reached")
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            raise BudgetExceeded(
                f"max_cost_usd {self.max_cost_usd:g} reached (spent ${self.cost_usd:.4f})"
            )

    def charge(self, tokens: int, cost_usd: float = 0.0) -> None:
        self.llm_calls += 1
        self.tokens += tokens
        self.cost_usd += cost_usd


@dataclass
class StepServices:
    """What the engine hands every StepContext of one run."""

    journal: Journal
    budget: RunBudget
    ask: InterruptAsker
    emit_domain: DomainEmitter
    model: ModelCaller | None = None
    retriever: Retriever | None = None
    app: ServiceRegistry = field(default_factory=ServiceRegistry)
    """The services the application provides, by type (``ctx.services.app.get(RunFolders)``);
    the engine never reads them."""
    live: LiveChannel | None = None
    """Where a streaming model call's partial text goes (never stored); None: calls don't stream."""
    emit_event: Callable[[Any], Any] | None = None
    """Appends a run event of an engine kind (agents emit ``policy_violation``)."""
    model_answers: Callable[[], ModelAnswers] | None = None
    """The run's model answers so far by who gave them (``engine.model_answers``), from the
    steps that have finished."""


@dataclass
class StepCallStats:
    llm_calls: int = 0
    tokens: int = 0
    replayed: int = 0
    providers: list[str] = field(default_factory=list)
    degraded: bool = False
    fallback_calls: int = 0


class StepContext:
    """The one object a step implementation talks to."""

    def __init__(
        self,
        *,
        run_id: str,
        spec: StepSpec,
        iteration: int,
        attempt: int,
        services: StepServices,
        upstream: dict[str, dict[str, Any]],
        run_inputs: dict[str, Any],
        repair_error: str | None = None,
        first_call_index: int = 0,
    ) -> None:
        self.run_id = run_id
        self.spec = spec
        self.step_id = spec.id
        self.iteration = iteration
        self.attempt = attempt
        self.services = services
        self.upstream = upstream
        """Outputs of every settled step this one can see, by step id."""
        self.run_inputs = run_inputs
        self.repair_error = repair_error
        """Set on the one repair attempt a step gets when its model-backed answer failed
        output validation, so the implementation can show the model what was wrong."""
        self.stats = StepCallStats()
        self._call_index = first_call_index
        """A repair attempt continues after the calls of the attempt it repairs, so its
        journaled calls are new calls, replayed on a re-run like any other. A retry starts
        where the failed attempt started: the calls that attempt completed replay (a call out
        is made once per pass), and the one that failed, never journaled, is made again."""

    # -- identity and budget -------------------------------------------------
    @property
    def budget(self) -> RunBudget:
        return self.services.budget

    @property
    def next_call_index(self) -> int:
        """The call index the next journaled call will get."""
        return self._call_index

    @property
    def config(self) -> dict[str, Any]:
        return self.spec.config

    @property
    def info(self) -> StepInfo:
        model = self.spec.model
        return StepInfo(
            run_id=self.run_id,
            step_id=self.step_id,
            iteration=self.iteration,
            tier=model.tier if model else None,
            profile=model.profile if model else None,
        )

    # -- the one journaling mechanism ---------------------------------------
    async def journaled(
        self,
        kind: str,
        call: Callable[[], Awaitable[Any]],
        encode: Callable[[Any], Any] = lambda value: value,
        decode: Callable[[Any], Any] = lambda payload: payload,
    ) -> tuple[Any, bool]:
        """Run ``call`` once per (run, step, iteration, call index); replay it after.

        Returns (value, replayed). The call index counts journaled calls in the
        order the step makes them, which is why steps must be deterministic
        between their calls out.
        """
        index = self._call_index
        self._call_index += 1
        journal = self.services.journal
        entry = journal.get(self.run_id, self.step_id, self.iteration, index)
        if entry is not None:
            if entry.kind != kind:
                raise RuntimeError(
                    f"journal mismatch at {self.step_id}#{index}: recorded {entry.kind}, now {kind};"
                    " the step is not deterministic between calls"
                )
            self.stats.replayed += 1
            return decode(entry.payload), True
        value = await call()
        journal.put(
            self.run_id,
            self.step_id,
            self.iteration,
            index,
            JournalEntry(kind=kind, payload=encode(value)),
        )
        return value, False

    # -- calls out ----------------------------------------------------------
    async def llm(self, request: Any) -> Any:
        model = self.services.model
        if model is None:
            raise RuntimeError("no model caller is configured for this run")

        index = self._call_index
        live = self.services.live

        async def call() -> Any:
            self.budget.check_call()
            if live is None or not isinstance(model, StreamingModelCaller):
                return await model.complete(request, self.info)
            output = OutputCoalescer(
                live,
                run_id=self.run_id,
                step_id=self.step_id,
                iteration=self.iteration,
                call_index=index,
            )
            try:
                return await model.stream(request, self.info, output.on_event)
            finally:
                output.close()

        response, replayed = await self.journaled(
            "llm", call, encode=model.encode, decode=lambda data: model.decode(request, data)
        )
        usage = model.usage(response)
        if not replayed:
            self.budget.charge(usage.tokens, usage.cost_usd)
        self.stats.llm_calls += 1
        self.stats.tokens += usage.tokens
        if usage.provider and usage.provider not in self.stats.providers:
            self.stats.providers.append(usage.provider)
        self.stats.degraded = self.stats.degraded or usage.degraded
        self.stats.fallback_calls += int(usage.fallback)
        return response

    async def retrieve(self, query: str, **options: Any) -> list[dict[str, Any]]:
        retriever = self.services.retriever
        if retriever is None:
            raise RuntimeError("no retriever is configured for this run")
        hits, _ = await self.journaled("retrieve", lambda: retriever.search(query, **options))
        return list(hits)

    async def interrupt(self, request: InterruptRequest) -> InterruptAnswer:
        """Ask a person; returns their answer on whichever engine runs the step."""
        interrupt_id = f"{self.run_id}:{self.step_id}:{self.iteration}:{self._call_index}"
        answer, _ = await self.journaled(
            "interrupt",
            lambda: self.services.ask(interrupt_id, request, self),
            encode=lambda a: a.model_dump(mode="json"),
            decode=InterruptAnswer.model_validate,
        )
        return InterruptAnswer.model_validate(answer)

    def count_fallback_answer(self) -> None:
        """Count an answer the step took from the built-in model instead of the provider's
        (whose answer failed validation): disclosed like the router's fallback answers."""
        self.stats.fallback_calls += 1

    def model_answers(self) -> ModelAnswers:
        """Who answered the run's model calls so far: the finished steps' answers plus this
        step's own (for a report that must say how much the built-in fallback wrote)."""
        finished = self.services.model_answers
        done = finished() if finished is not None else ModelAnswers()
        return done.plus(self.step_id, self.stats.llm_calls, self.stats.fallback_calls)

    def emit(self, name: str, payload: dict[str, Any]) -> None:
        """Append a namespaced ``domain`` event (``research.stage``, ...)."""
        self.services.emit_domain(name, payload, self.step_id)

    # -- context compilation (AgentMesh) -------------------------------------
    def context(self, max_tokens: int | None = None) -> str:
        """Upstream outputs compiled under the step's context budget.

        Required outputs (``context.requires``, as ``step`` or ``step.field``)
        come first and whole where they fit; the rest of the visible upstream
        outputs fill what budget is left, nearest first. Tokens are estimated
        at four characters each, the usual offline estimate.
        """
        spec = self.spec.context
        budget = max_tokens or (spec.max_tokens if spec else 6000)
        chars_left = budget * 4
        parts: list[str] = []
        seen: set[str] = set()
        required = list(spec.requires) if spec else []
        ordered = required + [sid for sid in reversed(list(self.upstream)) if sid not in required]
        for ref in ordered:
            step_id, _, field_name = ref.partition(".")
            outputs = self.upstream.get(step_id)
            if outputs is None or ref in seen:
                continue
            seen.add(ref)
            value: Any = outputs.get(field_name) if field_name else outputs
            text = json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
            block = f"## {ref}\n{text}\n"
            if len(block) > chars_left:
                if chars_left > 200:
                    parts.append(block[: chars_left - 20] + "\n[truncated]\n")
                break
            parts.append(block)
            chars_left -= len(block)
        return "".join(parts)
