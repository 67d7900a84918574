"""Stored values (YAML, JSON, event payloads) as words a person reads, never Python reprs.

One place for the rule, so no panel shows ``{'round': 1, …}``, ``None`` or ``True``:
missing is a dash, booleans are yes/no, floats keep three decimals, a mapping is
``key value`` pairs and a list of mappings is one line per item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MISSING = "–"
ITEM_SEPARATOR = " · "


def plain_scalar(value: Any) -> str:
    """One value that is not a container."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def plain_inline(value: Any) -> str:
    """A value on one line: containers flattened, empty ones a dash."""
    if isinstance(value, Mapping):
        parts = [
            f"{label(key)} {plain_inline(item)}" for key, item in value.items() if item is not None
        ]
        return ITEM_SEPARATOR.join(parts) or MISSING
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return ", ".join(plain_inline(item) for item in value) or MISSING
    return plain_scalar(value)


def plain_value(value: Any) -> str:
    """A value for a key/value panel: a list of mappings becomes one line per item."""
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str | bytes)
        and any(isinstance(item, Mapping) for item in value)
    ):
        return "\n".join(plain_inline(item) for item in value) or MISSING
    return plain_inline(value)


def label(key: Any) -> str:
    """A field name as words: ``best_ci_achieved`` → ``best ci achieved``."""
    return str(key).replace("_", " ")
