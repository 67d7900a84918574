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


def shown(value: T) -> T:
    """``value`` with every string in it (mapping keys, model and dataclass fields, items of
    lists and tuples) shown safely; the same object when nothing needed it."""
    return cast(T, _shown(value))


def _shown(value: Any) -> Any:
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
        items = [(_shown(key), _shown(item)) for key, item in value.items()]
        same = all(k is key and i is item for (k, i), (key, item) in zip(items, value.items()))
        return value if same else dict(items)
    if isinstance(value, list | tuple):
        cleaned = [_shown(item) for item in value]
        if all(new is old for new, old in zip(cleaned, value)):
            return value
        if isinstance(value, list):
            return cleaned
        return value._make(cleaned) if hasattr(value, "_make") else tuple(cleaned)
    return value


def _changed_fields(value: Any, names: Any) -> dict[str, Any]:
    changed = {}
    for name in names:
        old = getattr(value, name)
        new = _shown(old)
        if new is not old:
            changed[name] = new
    return changed
