"""A stored value of one run, spoken of as another's: the run id replaced inside its strings.

Run ids appear inside what runs store — interrupt ids, error texts, the path of
a file a run wrote into its folder. Shadow mode compares two runs with each one's
id made ``<run>`` (engine/canonical.py), and a run that replays another's journal
takes each answer as about itself (engine/journal.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def rebase(value: Any, old: str, new: str) -> Any:
    """``value`` with ``old`` replaced by ``new`` in every string inside it (mappings and
    sequences rebuilt as dicts and lists); an empty ``old`` replaces nothing."""
    if isinstance(value, str):
        return value.replace(old, new) if old else value
    if isinstance(value, Mapping):
        return {k: rebase(v, old, new) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rebase(v, old, new) for v in value]
    return value
