"""What every command reads from its click context — its workspace, a workflow file — and the
one-line error of bad input.

Kept import-light (click, the workspace, the loader's step registry — no rich, asyncio, run
store or research) so that `workbench validate` imports nothing it does not use; what driving
a run needs is in :mod:`tui.commands.common`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.errors import WorkflowLoadError
from tui.echo import echo
from tui.exit_codes import BAD_INPUT
from tui.launch.steps import load_workflow_file
from tui.launch.workspace import Workspace
from tui.root_options import WORKSPACE_KEY

if TYPE_CHECKING:
    from engine.spec import WorkflowDefinition

ON_INTERRUPT = click.Choice(["default", "wait", "ask"])
"""The ``--on-interrupt`` choices of run, resume and runs fork."""


class BadInput(click.ClickException):
    """One clear line on stderr and exit code 2, never a traceback."""

    exit_code = BAD_INPUT

    def show(self, file: Any = None) -> None:
        echo(f"error: {self.message}", err=True)


WORKSPACE_META = "tui.workspace"
"""Where a command's :class:`Workspace` is kept in click's shared ``Context.meta``."""


def named_workspace(ctx: click.Context) -> Workspace:
    """The ``--workspace`` given to the root command, else the user data dir — one object per
    command, so what it reads (the agent registry) is read once; the folder is not created."""
    workspace = ctx.meta.get(WORKSPACE_META)
    if not isinstance(workspace, Workspace):
        workspace = ctx.meta[WORKSPACE_META] = Workspace.named((ctx.obj or {}).get(WORKSPACE_KEY))
    return workspace


def workspace_of(ctx: click.Context) -> Workspace:
    """The command's workspace (:func:`named_workspace`), its folder created if missing."""
    workspace = named_workspace(ctx)
    workspace.root.mkdir(parents=True, exist_ok=True)
    return workspace


def load_or_exit(ctx: click.Context, path: str, exit_code: int) -> WorkflowDefinition:
    """The loaded workflow; otherwise every problem as file:line:col: message, then exit."""
    if not Path(path).exists():
        raise BadInput(f"{path}: no such workflow file; check the path")
    if not Path(path).is_file():
        raise BadInput(
            f"{path}: is not a regular file (a folder, device, pipe or socket); name a workflow "
            "YAML file"
        )
    workspace = named_workspace(ctx)
    try:
        return load_workflow_file(path, workspace)
    except WorkflowLoadError as error:
        for problem in error.problems:
            echo(str(problem), err=True)
        registry = workspace.agent_registry
        if registry.problems and any("agent." in p.message for p in error.problems):
            echo(
                f"note: the agent registry has {len(registry.problems)} problem(s) and leaves"
                " those agents out; `workbench registry validate` lists them",
                err=True,
            )
        sys.exit(exit_code)
