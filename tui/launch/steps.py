"""The steps a workflow may use, and loading a workflow file with them registered.

The built-in demo steps, research's steps and the workspace's agents register in the engine's
registry *later* (``StepRegistry.register_later``): each family's module is imported, or the
agent registry files read, only when a workflow names one of its steps. The loader checks each
step's ``uses`` against the registry, so `workbench validate` imports only the families the file
uses. Kept apart from the app's services so that a command that only loads workflows imports
nothing else.
"""

from __future__ import annotations

import importlib
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from engine.spec import WorkflowDefinition
from engine.steps import REGISTRY

if TYPE_CHECKING:
    from tui.launch.workspace import Workspace

MODULE_FAMILIES: dict[tuple[str, ...], str] = {
    ("demo.",): "engine.demo_steps",
    ("research.",): "research.steps",
}
"""Step name prefixes -> the module whose import registers those steps."""

AGENT_FAMILY = ("agent.", "advisory.")
"""The steps a workspace's agent registry defines: one per agent, and the advisory
orchestrator."""


def register_steps(workspace: Workspace) -> None:
    """Register the built-in demo steps, the research steps and ``workspace``'s agents, each
    family when a step of it is first asked for."""
    for prefixes, module in MODULE_FAMILIES.items():
        REGISTRY.register_later(prefixes, partial(importlib.import_module, module))
    REGISTRY.register_later(AGENT_FAMILY, partial(_register_agents, workspace))


def _register_agents(workspace: Workspace) -> None:
    from tui.launch.agents_wiring import register_agent_steps  # reaches the router's config

    register_agent_steps(workspace.agent_registry)


def load_workflow_file(path: str | Path, workspace: Workspace) -> WorkflowDefinition:
    """The workflow in ``path``, its steps checked against every step registered for
    ``workspace``."""
    from engine.loader import load_workflow

    register_steps(workspace)
    return load_workflow(path)
