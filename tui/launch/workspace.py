"""The app's workspace: the folder a person chose, holding their runs, corpus and workflows.

``--workspace`` (or ``$WORKBENCH_HOME``) chooses the folder; without it, the platform's user
data dir. The name of each file in it is :class:`plumbing.workspace.Workspace`'s (the one place
that names them, shared with the engine and the router); this subclass adds what only the app
does with the folder: choosing and creating it, and what is read from it once per process (the
agent registry), which travels inside the object — there is no module-level "current
workspace".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from plumbing.workspace import Workspace as WorkspaceFiles
from tui.paths import default_root

if TYPE_CHECKING:
    from agents.registry_loader import RegistryLoad


@dataclass(frozen=True)
class Workspace(WorkspaceFiles):
    """A workspace folder, the files in it, and what the app reads from it once."""

    @classmethod
    def named(cls, folder: str | Path | None) -> Workspace:
        """The workspace in ``folder`` (None: the user data dir), not created."""
        return cls(default_root() if folder is None else Path(folder).expanduser())

    @classmethod
    def at(cls, folder: str | Path | None) -> Workspace:
        """The workspace in ``folder`` (None: the user data dir), created if missing."""
        workspace = cls.named(folder)
        workspace.root.mkdir(parents=True, exist_ok=True)
        return workspace

    @cached_property
    def agent_registry(self) -> RegistryLoad:
        """The agents, tools, model profiles and policies this workspace sees (the shipped
        ones, its own folder's, the config folder's), read on first use and kept."""
        from tui.launch.agents_wiring import load_agent_registry

        return load_agent_registry(self.root)
