"""The workspace: one folder holding a person's runs, corpus and workflows — and the one place
that names each file in it.

``--workspace`` (or ``$WORKBENCH_HOME``) chooses the folder; without it, the platform's user
data dir. Everything that opens a workspace file asks a :class:`Workspace` for its path, and what
is read from the folder once per process (the agent registry) travels inside the object — there
is no module-level "current workspace".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from tui.paths import default_root

if TYPE_CHECKING:
    from agents.registry_loader import RegistryLoad

RUNS_FILE = "runs.sqlite"
CORPUS_FILE = "corpus.sqlite"
RUN_FOLDERS = "runs"
USER_WORKFLOWS = "workflows"


@dataclass(frozen=True)
class Workspace:
    """A workspace folder and the files in it."""

    root: Path

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

    @property
    def runs_db(self) -> Path:
        """The run store (every run's events, results and interrupts)."""
        return self.root / RUNS_FILE

    @property
    def corpus_db(self) -> Path:
        """The research corpus (SQLite FTS5)."""
        return self.root / CORPUS_FILE

    @property
    def run_folders(self) -> Path:
        """Where runs write their artifacts, one folder per run id."""
        return self.root / RUN_FOLDERS

    def run_folder(self, run_id: str) -> Path:
        return self.run_folders / run_id

    @property
    def workflows(self) -> Path:
        """The person's own workflow files, listed beside the shipped ones."""
        return self.root / USER_WORKFLOWS

    @cached_property
    def agent_registry(self) -> RegistryLoad:
        """The agents, tools, model profiles and policies this workspace sees (the shipped
        ones, its own folder's, the config folder's), read on first use and kept."""
        from tui.launch.agents_wiring import load_agent_registry

        return load_agent_registry(self.root)
