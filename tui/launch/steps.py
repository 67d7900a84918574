"""The steps a workflow may use, and loading a workflow file with them registered.

Importing the built-in demo steps and research's steps registers them in the engine's registry;
the loader checks each step's ``uses`` against it. Kept apart from the app's services so that a
command that only loads workflows (`workbench validate`) imports nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from engine.spec import WorkflowDefinition

if TYPE_CHECKING:
    from tui.launch.workspace import Workspace


def register_steps(workspace: Workspace) -> None:
    """Register the built-in demo steps, the research steps and ``workspace``'s agents."""
    import engine.demo_steps  # noqa: F401
    import research.steps  # noqa: F401
    from tui.launch.agents_wiring import register_agent_steps

    register_agent_steps(workspace)


def load_workflow_file(path: str | Path, workspace: Workspace) -> WorkflowDefinition:
    """The workflow in ``path``, its steps checked against every step registered for
    ``workspace``."""
    from engine.loader import load_workflow

    register_steps(workspace)
    return load_workflow(path)
