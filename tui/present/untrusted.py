"""Values from outside as the app shows them: every string in them, however deep, passed
through :func:`plumbing.untrusted_text.for_terminal`.

Textual writes what a widget holds to the terminal as it is (control characters included), so
the app cleans what it reads where it reads it — a run's events, the stored runs and workflow
files Home and the history list, a step's model calls and live output, a report — rather than
in each of the many widgets that show a part of it. A value with nothing to clean is returned
itself (no copy), so the common case costs one scan of each string.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from plumbing.untrusted_text import for_terminal

T = TypeVar("T")
_SCALARS = (int, float, type(None))


def for_display(value: T) -> T:
    """``value`` with every string in it (mapping keys, model and dataclass fields, items of
    lists and tuples) shown safely; the same object when nothing needed it."""
    return cast(T, _cleaned(value)) if _needs_cleaning(value) else value


def _needs_cleaning(value: Any) -> bool:
    """Whether any string in ``value`` would change: one walk that allocates nothing, so a clean
    batch of events (the common case, folded 20 times a second) costs no copies."""
    if isinstance(value, str):
        return for_terminal(value) is not value
    if isinstance(value, dict):
        for key, item in value.items():
            if _needs_cleaning(key) or _needs_cleaning(item):
                return True
        return False
    if isinstance(value, (list, tuple)):
        children: Any = value
    elif isinstance(value, BaseModel):
        children = value.__dict__.values()
    elif isinstance(value, _SCALARS):
        return False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = (getattr(value, field.name) for field in dataclasses.fields(value))
    else:
        return False
    for child in children:
        if _needs_cleaning(child):
            return True
    return False


def _cleaned(value: Any) -> Any:
    if isinstance(value, str):
        return for_terminal(value)
    if isinstance(value, BaseModel):
        changed = _changed_fields(value, type(value).model_fields)
        return value.model_copy(update=changed) if changed else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [field.name for field in dataclasses.fields(value) if field.init]
        changed = _changed_fields(value, names)
        return dataclasses.replace(value, **changed) if changed else value
    if isinstance(value, dict):
        return {_cleaned(key): _cleaned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cleaned(item) for item in value]
    if isinstance(value, tuple):
        items = [_cleaned(item) for item in value]
        return value._make(items) if hasattr(value, "_make") else tuple(items)
    return value


def _changed_fields(value: Any, names: Any) -> dict[str, Any]:
    changed = {}
    for name in names:
        old = getattr(value, name)
        if _needs_cleaning(old):
            changed[name] = _cleaned(old)
    return changed
