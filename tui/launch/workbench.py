"""What the app needs from the rest of the product, in one place.

``Workbench`` finds workflows (shipped and the user's), opens the run store
for reading, and builds :data:`~tui.app.run_driver.RunJob` s that start or resume
runs on the worker thread through ``tui.launch.wiring.build_run_context`` (router +
corpus + store, from the loaded config's ``router:`` and ``corpus:``
sections). Tests build one over a temporary workspace; nothing here touches
Textual.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platformdirs import user_data_dir

from engine.protocol import ExecutionResult, InterruptResponder, RunContext
from engine.selector import create_engine, select_engine
from engine.spec import WorkflowDefinition
from engine.store import RunStore, new_run_id
from tui.app.run_driver import EventInbox, NewRunJob, RunJob
from tui.config import APP_NAME, WorkbenchConfig
from workflows import WORKFLOWS_DIR

ContextFactory = Callable[[Path, dict[str, Any], InterruptResponder], RunContext]
"""(workspace, inputs, responder) -> RunContext, called on the worker thread."""

SHIPPED_WORKFLOWS = WORKFLOWS_DIR
RUNS_DB = "runs.sqlite"


@dataclass(frozen=True)
class WorkflowEntry:
    name: str
    path: Path
    origin: str
    """``shipped`` or ``user``."""
    definition: WorkflowDefinition | None = None
    error: str = ""


def default_workspace() -> Path:
    return Path(user_data_dir(APP_NAME))


def register_steps() -> None:
    """Register the built-in demo steps and the research steps (importing them registers
    them; the loader checks ``uses`` against the registry)."""
    import engine.demo_steps  # noqa: F401
    import research.steps  # noqa: F401
    from tui.launch.agents_wiring import register_agent_steps

    register_agent_steps()


def _load(path: Path) -> WorkflowDefinition:
    from engine.loader import load_workflow

    register_steps()
    return load_workflow(path)


@dataclass
class Workbench:
    workspace: Path
    config: WorkbenchConfig = field(default_factory=WorkbenchConfig)
    config_error: str = ""
    clock: Callable[[], float] = time.time
    """Wall time for countdowns and ages; tests freeze it."""
    extra_workflow_dirs: list[Path] = field(default_factory=list)
    shipped_dir: Path = SHIPPED_WORKFLOWS
    context_factory: ContextFactory | None = None
    """Builds the worker's RunContext; None means tui.launch.wiring (router + corpus + store from ``config``)."""
    _store: RunStore | None = None

    @property
    def runs_db(self) -> Path:
        return self.workspace / RUNS_DB

    def store(self) -> RunStore:
        """The UI thread's own connection to the run store (runs are written by their worker)."""
        if self._store is None:
            self._store = RunStore(self.runs_db)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def run_folder(self, run_id: str) -> Path:
        return self.workspace / "runs" / run_id

    # -- workflows -------------------------------------------------------------
    def workflow_dirs(self) -> list[tuple[Path, str]]:
        dirs = [(self.shipped_dir, "shipped"), (self.workspace / "workflows", "user")]
        dirs += [(Path(d).expanduser(), "user") for d in self.config.workflow_dirs]
        dirs += [(d, "user") for d in self.extra_workflow_dirs]
        return dirs

    def workflows(self) -> list[WorkflowEntry]:
        entries: list[WorkflowEntry] = []
        seen: set[Path] = set()
        for folder, origin in self.workflow_dirs():
            if not folder.is_dir():
                continue
            for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
                if path.resolve() in seen:
                    continue
                seen.add(path.resolve())
                try:
                    definition = _load(path)
                except Exception as exc:  # noqa: BLE001 - a bad file is listed with its one-line error
                    message = str(exc).splitlines()[0].replace(str(path), path.name)
                    entries.append(WorkflowEntry(path.stem, path, origin, None, message))
                    continue
                entries.append(WorkflowEntry(definition.name, path, origin, definition))
        return entries

    # -- runs ------------------------------------------------------------------
    def run_context(
        self, inputs: dict[str, Any], responder: InterruptResponder, run_id: str | None = None
    ) -> RunContext:
        """A RunContext for the worker thread: ``context_factory`` when set, else tui.launch.wiring's.

        ``run_id`` goes in at construction: the wiring tags provider events with it.
        """
        if self.context_factory is not None:
            context = self.context_factory(self.workspace, inputs, responder)
            context.run_id = run_id or context.run_id
            return context
        from tui.launch.wiring import build_run_context

        return build_run_context(
            self.workspace, inputs=inputs, responder=responder, run_id=run_id, settings=self.config
        )

    async def _close(self, context: RunContext) -> None:
        if self.context_factory is None:
            from tui.launch.wiring import close_run_context

            await close_run_context(context, close_store=True)
        else:
            context.store.close()

    def new_run_job(
        self,
        path: Path,
        inputs: dict[str, Any],
        engine: str | None = None,
        run_id: str | None = None,
    ) -> NewRunJob:
        """A job starting a new run, its id chosen up front (``job.run_id``)."""
        run_id = run_id or new_run_id()

        async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
            definition = _load(path)
            context = self.run_context(inputs, responder, run_id)
            selection = select_engine(definition, override=engine)
            context.engine_reason = context.engine_reason or selection.reason
            unsubscribe = context.store.subscribe(inbox.put)
            try:
                return await create_engine(selection.name).execute(definition, context)
            finally:
                unsubscribe()
                await self._close(context)

        return NewRunJob(run_id, job)

    def resume_job(self, run_id: str) -> RunJob:
        """Resume a stored run; answers recorded in the store are consumed by the engine."""

        async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
            context = self.run_context({}, responder, run_id)
            record = context.store.get_run(run_id)
            unsubscribe = context.store.subscribe(inbox.put, run_id)
            try:
                return await create_engine(record.engine).resume(run_id, context)
            finally:
                unsubscribe()
                await self._close(context)

        return job
