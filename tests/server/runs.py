"""Runs the server tests read: made by the real engines in this process, stored in the test's
PostgreSQL database (as a worker would store them), or written event by event by a writer
holding the run's lease."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.events import Log, RunFinished
from engine.spec import WorkflowDefinition
from engine.states import RunStatus
from engine.store.postgres import PostgresRunStore
from tui.launch.run import open_run
from tui.launch.steps import load_workflow_file
from tui.launch.workspace import Workspace
from workflows import WORKFLOWS_DIR

REPORTING_WORKFLOW = """\
name: reporting
description: A run whose outputs hold a report.
inputs:
  title: {type: string, default: "Findings"}
steps:
  - id: write
    uses: demo.echo
    inputs: {title: "inputs.title"}
    config: {set: {report: "# Findings\\n\\nThe answer is 42."}}
outputs:
  report: "steps.write.outputs.report"
"""


def shipped(name: str, workspace: Workspace) -> WorkflowDefinition:
    return load_workflow_file(WORKFLOWS_DIR / f"{name}.yaml", workspace)


def run_workflow(
    database: str,
    workspace: Workspace,
    definition: WorkflowDefinition,
    inputs: dict[str, Any] | None = None,
) -> str:
    """Run ``definition`` to its end on the database (nobody answers prompts: a run that asks
    is stored WAITING); its run id."""

    async def go(store: PostgresRunStore) -> str:
        async with open_run(workspace, definition, inputs=inputs or {}, store=store) as run:
            return (await run.start()).run_id

    with PostgresRunStore(database) as store:
        return asyncio.run(go(store))


def reporting_workflow(folder: Path, workspace: Workspace) -> WorkflowDefinition:
    path = folder / "reporting.yaml"
    path.write_text(REPORTING_WORKFLOW, encoding="utf-8")
    return load_workflow_file(path, workspace)


class EventWriter:
    """A writer holding the lease of one run of its own, appending log events to it."""

    def __init__(self, database: str, workspace: Workspace) -> None:
        self.store = PostgresRunStore(database)
        definition = shipped("fan_out", workspace)
        self.run_id = self.store.create_run(definition, {}, "kahn", "written by a test")
        self.store.claim(self.run_id)

    def write(self, count: int, per_commit: int = 1) -> None:
        """``count`` log events, ``per_commit`` in each transaction."""
        written = 0
        while written < count:
            with self.store.batch():
                for _ in range(min(per_commit, count - written)):
                    written += 1
                    self.store.append(Log(run_id=self.run_id, message=f"event {written}"))

    def finish(self) -> None:
        with self.store.batch():
            self.store.append(RunFinished(run_id=self.run_id, status=RunStatus.COMPLETED))
            self.store.set_status(self.run_id, RunStatus.COMPLETED)

    def close(self) -> None:
        self.store.close()
