"""One ``ExecutionEngine`` protocol, two engines (ADR-001 option D, DESIGN §5)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field

from engine.context import InterruptAnswer, InterruptRequest, ModelCaller
from engine.live import LiveChannel
from engine.services import ServiceRegistry
from engine.spec import WorkflowDefinition
from engine.states import RunStatus, StepStatus
from plumbing.frozen import Frozen
from plumbing.retriever import Retriever

if TYPE_CHECKING:
    from engine.events import InterruptRaised


class TieBreakRequest(Frozen):
    run_id: str
    step_id: str
    valid_targets: list[str]
    default_target: str
    hint: str = ""
    context: str = ""
    timeout_s: float = 30.0


class TieBreakAnswer(Frozen):
    target: str | None
    confidence: float = 0.0
    reasoning: str = ""
    outcome: Literal["model", "invalid_answer", "timeout", "error"] = "model"


TieBreaker = Callable[[TieBreakRequest], Awaitable[TieBreakAnswer]]
"""Injected by the application (the router supplies the model-backed one)."""

InterruptResponder = Callable[
    ["InterruptRaised", InterruptRequest], Awaitable[InterruptAnswer | None]
]
"""Who answers prompts: the TUI (a future a modal resolves), headless defaults,
or nobody — ``None`` means nobody is there, and the run is stored WAITING."""


@dataclass
class RunContext:
    """Everything one run needs besides its definition. Built by the application."""

    store: Any
    """The run store (engine/store.py); typed loosely to keep this module import-light."""
    inputs: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    model: ModelCaller | None = None
    retriever: Retriever | None = None
    tie_breaker: TieBreaker | None = None
    responder: InterruptResponder | None = None
    services: ServiceRegistry = field(default_factory=ServiceRegistry)
    """What the application provides the run's steps, by type (engine/services.py)."""
    engine_reason: str = ""
    replay_from: str | None = None
    """A run whose journal answers this run's calls first (shadow mode's second engine)."""
    live: LiveChannel | None = None
    """Live (unstored) model output while calls stream (engine/live.py); None: no streaming."""


class ExecutionResult(Frozen):
    run_id: str
    status: RunStatus
    reason: str = ""
    outputs: dict[str, Any] = Field(default_factory=dict)
    step_statuses: dict[str, StepStatus] = Field(default_factory=dict)
    missing: list[str] = Field(default_factory=list)
    pending_interrupts: list[str] = Field(default_factory=list)
    engine: str = ""


class EngineCapabilities(Frozen):
    cycles: bool
    interrupts_hold_superstep: bool
    checkpoints: bool
    fork: bool = True


@dataclass(frozen=True)
class ForkEdits:
    """What a fork changes besides going back: step outputs and run inputs."""

    outputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """step id -> {field: value} set on that step's restored outputs."""
    inputs: Mapping[str, Any] = field(default_factory=dict)


class ExecutionEngine(Protocol):
    name: str
    capabilities: EngineCapabilities

    async def execute(self, wf: WorkflowDefinition, run: RunContext) -> ExecutionResult: ...

    async def resume(self, run_id: str, run: RunContext) -> ExecutionResult: ...

    async def fork(
        self, run_id: str, at_step: str, run: RunContext, edits: ForkEdits | None = None
    ) -> ExecutionResult:
        """``at_step``: ``STEP`` or ``STEP@ITERATION`` (see engine/time_travel.py)."""
        ...

    def stage_fork(
        self, run_id: str, at_step: str, run: RunContext, edits: ForkEdits | None = None
    ) -> str:
        """Store the fork :meth:`fork` makes without running it (a :meth:`resume` runs it)."""
        ...
