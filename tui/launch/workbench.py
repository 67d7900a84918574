"""What the app needs from the rest of the product, in one place.

``Workbench`` finds workflows (shipped and the user's), opens the run store
for reading, and builds :data:`~tui.launch.run_driver.RunJob` s that start or resume
runs on the worker thread through :func:`tui.launch.run.open_run` (router, corpus
and store from the loaded config's ``router:`` and ``corpus:`` sections, unless
``parts`` gives them). Attached to a `workbench server` (``server``), the runs are the
server's instead: read through the run API, started and followed there
(tui/launch/server_runs.py). Tests build one over a temporary workspace; nothing here
touches Textual.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import click

from engine.live import LiveChannel
from engine.protocol import ExecutionResult, InterruptResponder
from engine.spec import WorkflowDefinition
from engine.store import BaseRunStore, RunReader, RunSummary, new_run_id
from tui.client.http import ServerClient
from tui.client.remote_store import RemoteRunStore
from tui.config import (
    ConfigError,
    WorkbenchConfig,
    config_path_for,
    config_required,
    load_config,
)
from tui.launch.fork import ForkPlan
from tui.launch.parts import RunParts
from tui.launch.run import OpenRun, open_run
from tui.launch.run_driver import EventInbox, NewRunJob, RunJob
from tui.launch.server_runs import follow_job, start_job
from tui.launch.steps import load_workflow_file, register_steps
from tui.launch.stores import open_runs, runs_location
from tui.launch.workspace import Workspace
from tui.root_options import SERVER_KEY
from workflows import WORKFLOWS_DIR

SHIPPED_WORKFLOWS = WORKFLOWS_DIR


@dataclass(frozen=True)
class WorkflowEntry:
    name: str
    path: Path
    origin: str
    """``shipped`` or ``user``."""
    definition: WorkflowDefinition | None = None
    error: str = ""


@dataclass
class Workbench:
    workspace: Path
    config: WorkbenchConfig = field(default_factory=WorkbenchConfig)
    config_error: str = ""
    clock: Callable[[], float] = time.time
    """Wall time for countdowns and ages; tests freeze it."""
    extra_workflow_dirs: list[Path] = field(default_factory=list)
    shipped_dir: Path = SHIPPED_WORKFLOWS
    parts: RunParts = field(default_factory=RunParts)
    """Parts the app's runs are given instead of the workspace's own (tests)."""
    live: LiveChannel = field(default_factory=LiveChannel)
    """Live model output of every run started here (step detail shows the running step's)."""
    server: ServerClient | None = None
    """The `workbench server` whose runs the app shows (``workbench --server URL``)."""
    _store: RunReader | None = None

    @cached_property
    def files(self) -> Workspace:
        """The workspace's files, and what is read from it once (its agent registry)."""
        return Workspace(self.workspace)

    @property
    def runs_db(self) -> Path:
        """The workspace's SQLite run store (where runs are unless the config names a database)."""
        return self.files.runs_db

    @property
    def runs_location(self) -> str:
        """Where the runs are, as messages show it (a file, a database without its password, or
        a server)."""
        if self.server is not None:
            return f"the server at {self.server.url}"
        return runs_location(self.files, self.config)

    def open_store(self) -> BaseRunStore:
        """A new connection to the run store the config names (its owner closes it)."""
        return open_runs(self.files, self.config)

    def store(self) -> RunReader:
        """The UI thread's own connection to the run store (runs are written by their worker),
        or to the server's runs."""
        if self._store is None:
            self._store = (
                RemoteRunStore(self.server) if self.server is not None else self.open_store()
            )
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        if self.server is not None:
            self.server.close()

    def follows(self, record: RunSummary) -> bool:
        """Whether a run opened in the app is followed live at once: a server's unfinished
        run (its workers go on with it whether or not anyone watches)."""
        return self.server is not None and not record.status.final

    def resume_refusal(self, run_id: str) -> str | None:
        """Why the run must not be resumed here (someone drives it); None when it may be. A
        server's run is only followed here (its workers drive it): never refused."""
        from engine.lifecycle import resume_refusal

        if self.server is not None:
            return None
        try:
            return resume_refusal(self.store().get_run(run_id))
        except LookupError:
            return None  # the resume job reports an unknown run

    def corpus_notices(self) -> list[str]:
        """What ``workbench corpus list`` says of the workspace corpus's collections indexed by
        an older version of the workbench, one line each, for the app to show when it starts:
        none for a server's runs (their corpus is the server's) or a workspace without a corpus
        yet. Opening the corpus file may raise what :class:`research.corpus.Corpus` raises."""
        path = self.files.corpus_db
        if self.server is not None or not path.is_file():
            return []
        from research.corpus import Corpus  # numpy and the index: only when the check runs
        from research.default_corpus import outdated_notices

        with Corpus(path) as corpus:
            return outdated_notices(corpus)

    def run_folder(self, run_id: str) -> Path:
        return self.files.run_folder(run_id)

    # -- workflows -------------------------------------------------------------
    def workflow_dirs(self) -> list[tuple[Path, str]]:
        dirs = [(self.shipped_dir, "shipped"), (self.files.workflows, "user")]
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
                    definition = load_workflow_file(path, self.files)
                except Exception as exc:  # noqa: BLE001 - a bad file is listed with its one-line error
                    message = str(exc).splitlines()[0].replace(str(path), path.name)
                    entries.append(WorkflowEntry(path.stem, path, origin, None, message))
                    continue
                entries.append(WorkflowEntry(definition.name, path, origin, definition))
        return entries

    # -- runs ------------------------------------------------------------------
    async def _run(
        self,
        definition: WorkflowDefinition,
        go: Callable[[OpenRun], Awaitable[ExecutionResult]],
        responder: InterruptResponder,
        inbox: EventInbox,
        **given: Any,
    ) -> ExecutionResult:
        """Open a run of ``definition`` for the app (its events into ``inbox``) and ``go``;
        ``given``: the rest of :func:`~tui.launch.run.open_run`'s arguments."""
        async with open_run(
            self.files,
            definition,
            responder=responder,
            surfaces=[inbox.put],
            settings=self.config,
            parts=self.parts,
            live=self.live,
            progress=inbox.progress,
            **given,
        ) as run:
            return await go(run)

    def new_run_job(
        self,
        path: Path,
        inputs: dict[str, Any],
        engine: str | None = None,
        run_id: str | None = None,
    ) -> NewRunJob:
        """A job starting a new run, its id chosen up front (``job.run_id``)."""
        run_id = run_id or new_run_id()
        if self.server is not None:
            return start_job(self.server, path, inputs, engine, run_id)

        async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
            definition = load_workflow_file(path, self.files)
            return await self._run(
                definition,
                OpenRun.start,
                responder,
                inbox,
                inputs=inputs,
                run_id=run_id,
                engine=engine,
            )

        return NewRunJob(run_id, job)

    def resume_job(self, run_id: str, shown_seq: int = 0) -> RunJob:
        """Resume a stored run; answers recorded in the store are consumed by the engine. A
        server's run is followed from after ``shown_seq``, the last event already shown."""
        if self.server is not None:
            return follow_job(self.server, run_id, shown_seq)

        async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
            register_steps(self.files)
            with self.open_store() as store:
                record = store.get_run(run_id)
                return await self._run(
                    record.definition,
                    OpenRun.resume,
                    responder,
                    inbox,
                    inputs=record.inputs,
                    run_id=run_id,
                    engine=record.engine,
                    engine_reason=record.engine_reason,
                    store=store,
                )

        return job

    def fork_job(self, plan: ForkPlan) -> NewRunJob:
        """A job running the checked fork ``plan`` (tui/launch/fork.py) as a new run."""

        async def fork(run: OpenRun) -> ExecutionResult:
            return await run.fork(plan.source.run_id, str(plan.point), plan.edits)

        async def job(responder: InterruptResponder, inbox: EventInbox) -> ExecutionResult:
            with self.open_store() as store:
                return await self._run(
                    plan.source.definition,
                    fork,
                    responder,
                    inbox,
                    inputs=plan.inputs,
                    run_id=plan.run_id,
                    engine=plan.source.engine,
                    engine_reason=plan.reason,
                    store=store,
                )

        return NewRunJob(plan.run_id, job)


def make_workbench(workspace: str | Path | None, config_path: Path | None = None) -> Workbench:
    """The app's services; a broken config is reported in the app, never as a traceback.

    A file named with ``--config`` must exist (click prints that as one line); a mistake
    inside the file opens the app on the defaults with the error shown. With ``--server URL``
    the runs are that server's.
    """
    ctx = click.get_current_context(silent=True)
    path = config_path or config_path_for(ctx)
    if config_required(ctx) and not path.exists():
        raise ConfigError(f"{path}: no such config file; check the --config path")
    try:
        config, error = load_config(path), ""
    except ConfigError as exc:
        config, error = WorkbenchConfig(), str(exc)
    server = ctx.find_root().obj.get(SERVER_KEY) if ctx is not None and ctx.obj else None
    return Workbench(
        workspace=Workspace.at(workspace).root,
        config=config,
        config_error=error,
        server=ServerClient(server) if server else None,
    )
