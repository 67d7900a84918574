"""One way to run a run: :func:`open_run`, used by the CLI, the app and the chaos demo.

``open_run`` selects the engine, opens the run store, and — for a workflow with steps beyond the
built-in demo steps — the corpus and the router (:mod:`tui.launch.wiring`); it subscribes the
surfaces that show the run (the headless printer, the app's event inbox) and, on leaving, closes
everything it opened, in reverse order. What it is given (a store, a router, a corpus) stays
open: its owner closes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.events import RunEvent
from engine.live import LiveChannel
from engine.protocol import (
    ExecutionEngine,
    ExecutionResult,
    ForkEdits,
    InterruptResponder,
    RunContext,
)
from engine.spec import WorkflowDefinition
from engine.store import BaseRunStore, new_run_id
from tui.launch.parts import IndexProgress, RunParts
from tui.launch.workspace import Workspace

if TYPE_CHECKING:
    from tui.config import WorkbenchConfig

Surface = Callable[[list[RunEvent]], None]
"""Shows a run: receives each batch of its stored events (on the store's delivery thread)."""

BUILTIN_STEP_PREFIX = "demo."


def _engine(name: str) -> ExecutionEngine:
    from engine.selector import create_engine

    return create_engine(name)


@dataclass
class OpenRun:
    """A run ready to go: its context, its workflow and the engine chosen for it."""

    context: RunContext
    definition: WorkflowDefinition
    engine: str
    router: Any | None = None
    """The router the run calls models through (None: a run of built-in demo steps)."""

    @property
    def run_id(self) -> str:
        assert self.context.run_id is not None
        return self.context.run_id

    async def start(self) -> ExecutionResult:
        """Run the workflow from its first step."""
        return await _engine(self.engine).execute(self.definition, self.context)

    async def resume(self) -> ExecutionResult:
        """Continue the stored run ``run_id`` without re-running its finished steps."""
        return await _engine(self.engine).resume(self.run_id, self.context)

    async def fork(
        self, source_run_id: str, at_step: str, edits: ForkEdits | None = None
    ) -> ExecutionResult:
        """A new run from ``source_run_id`` as it was just before ``at_step`` (``STEP[@ITERATION]``),
        with ``edits`` to restored outputs or inputs, re-running the step and what follows it."""
        return await _engine(self.engine).fork(source_run_id, at_step, self.context, edits)


def needs_application(definition: WorkflowDefinition) -> bool:
    """Whether the run needs the application's wiring: a step it implements (any but the built-in
    demo ones), or a model-backed tie-breaker (which needs the router even when every step is
    built in)."""
    return any(
        not step.uses.startswith(BUILTIN_STEP_PREFIX)
        or (
            step.routing is not None
            and step.routing.tie_breaker is not None
            and step.routing.tie_breaker.enabled
        )
        for step in definition.steps
    )


@asynccontextmanager
async def open_run(
    workspace: Workspace,
    definition: WorkflowDefinition,
    *,
    inputs: Mapping[str, Any],
    run_id: str | None = None,
    engine: str | None = None,
    engine_reason: str | None = None,
    responder: InterruptResponder | None = None,
    surfaces: Sequence[Surface] = (),
    store: BaseRunStore | None = None,
    settings: WorkbenchConfig | None = None,
    parts: RunParts = RunParts(),
    live: LiveChannel | None = None,
    progress: IndexProgress | None = None,
) -> AsyncIterator[OpenRun]:
    """Everything one run needs, open while the block runs, closed after it.

    ``engine`` forces an engine (None or ``auto``: chosen by the workflow's shape);
    ``engine_reason`` overrides the selector's reason (a resume keeps the stored one). ``store``
    is the caller's open run store (None: the one ``settings`` name, opened here). ``settings``
    is the workbench config (None: the active config file, read only when the run opens its own
    store or needs the router or the corpus). ``live`` is where streamed model output goes (None: a channel of the run's own).
    ``progress`` hears the counts of the corpus indexed on first use.
    """
    from engine.selector import select_engine  # graph analysis (networkx): only when a run opens

    selection = select_engine(definition, engine)
    async with AsyncExitStack() as stack:
        if store is None:
            from tui.config import active_config
            from tui.launch.stores import open_runs

            settings = settings if settings is not None else active_config()
            store = stack.enter_context(open_runs(workspace, settings))
        context = RunContext(
            store=store,
            inputs=dict(inputs),
            run_id=run_id or new_run_id(),
            responder=responder,
            tie_breaker=parts.tie_breaker,
            engine_reason=selection.reason if engine_reason is None else engine_reason,
            live=live,
        )
        opened = OpenRun(context, definition, selection.name)
        if needs_application(definition):
            from tui.launch.wiring import wire_application

            opened.router = await wire_application(
                stack, context, workspace, settings, parts, progress
            )
        for surface in surfaces:
            stack.callback(store.subscribe(surface, run_id=context.run_id))
        yield opened
