"""Where a run writes its files: the service research's steps and tools ask for by type.

The composition root provides ``RunFolders(<workspace>/runs)`` in the run's
services (engine/services.py); a run with none (a test, an embedding) writes
no files. Each run writes only into its own folder, named by its run id — so
the two runs of a shadow comparison each have their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunFolders:
    root: Path
    """The folder holding one sub-folder per run."""

    def of(self, run_id: str) -> Path:
        return self.root / run_id
