"""What the wiring of a run is handed: parts given instead of the workspace's own, and who hears
what a run's start indexes. Light, apart from the wiring (tui/launch/wiring.py), which imports
the router, research and httpx: the run launcher (tui/launch/run.py) names these for every run
and imports the wiring only for a run that needs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.protocol import TieBreaker

IndexProgress = Callable[[str, int, int], None]
"""Hears what a run's start indexes: (what, e.g. ``indexing python-docs``, done, total); called
on the thread that opens the run."""


@dataclass(frozen=True)
class RunParts:
    """Parts a run is given instead of the workspace's own; None: built from the config.

    Given parts are the caller's: ``open_run`` neither closes them nor builds their kind.
    """

    router: Any | None = None
    """A ``router.router.SmartModelRouter`` (the chaos demo's, a test's)."""
    corpus: Any | None = None
    """A ``research.corpus.Corpus`` (a test's PEP collection)."""
    tie_breaker: TieBreaker | None = None
    environ: Mapping[str, str] | None = None
    """Where provider keys are read (None: the process environment)."""
