"""A run's inputs checked against the workflow's declared inputs.

Values arrive as Python values (from the TUI's form or an API caller) or as
text (``--input key=value`` on the command line); both go through
:func:`resolve_inputs`, which applies defaults, converts text to the declared
type, checks the declared bounds (choices, min, max, max_length; whole numbers within the
range CEL computes exactly) and says in one line what is wrong — before a run
exists, so a bad value never creates a run that then fails. A value nesting deeper than
:data:`MAX_INPUT_DEPTH` or longer than :data:`MAX_INPUT_CHARS` is refused before it is parsed
(a 50,000-level JSON list would exhaust Python's recursion; 200 levels, CEL's).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from engine.spec import InputSpec, WorkflowDefinition
from plumbing.yaml_reading import MAX_DEPTH


class InputError(ValueError):
    """A run input that does not fit its declaration; ``str()`` is one line for the person."""


LARGEST_INT = 2**53
"""Whole numbers beyond this are not exact in the doubles CEL computes with (the engine's
numeric policy), so an int input is refused outside ±LARGEST_INT before a run exists."""

MAX_INPUT_DEPTH = MAX_DEPTH
"""How deep a list or dict input may nest: as deep as a workflow file may (plumbing's one YAML
limit, 40), well inside what CEL converts (100)."""
MAX_INPUT_CHARS = 1_000_000
"""How long one input may be, as text (a list's or dict's JSON)."""

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = re.compile(r"[\[\]{}]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""What a byte that is not UTF-8 becomes in an argument (surrogateescape) or a JSON ``\\udcXX``
escape: no text, and nothing stores, prints or serialises it."""

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


def _convert(name: str, spec: InputSpec, value: Any) -> Any:
    kind = spec.type
    try:
        if kind == "string":
            return value if isinstance(value, str) else json.dumps(value)
        if kind == "int":
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            number = int(value)
            if abs(number) > LARGEST_INT:
                raise InputError(
                    f"input {name!r} must be a whole number between -{LARGEST_INT} and"
                    f" {LARGEST_INT}, got {_shown(value)}; pass a smaller number"
                )
            return number
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError
            real = float(value)
            if not math.isfinite(real):
                raise ValueError
            return real
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError
        if kind == "date":
            if isinstance(value, dt.date):
                return value.isoformat()
            return dt.date.fromisoformat(str(value)).isoformat()
        if kind == "list":
            parsed = _json(name, value) if isinstance(value, str) else value
            if isinstance(parsed, (list, tuple)):
                return list(parsed)
            if isinstance(value, str):
                return [part.strip() for part in value.split(",") if part.strip()]
            raise ValueError
        if kind == "dict":
            parsed = _json(name, value) if isinstance(value, str) else value
            if not isinstance(parsed, dict):
                raise ValueError
            return dict(parsed)
    except InputError:
        raise
    except (ValueError, TypeError, json.JSONDecodeError):
        pass
    hints = {
        "int": "a whole number",
        "float": "a number",
        "bool": "true or false",
        "date": "a date like 2025-01-31",
        "list": "a JSON list or comma-separated values",
        "dict": "a JSON object",
        "string": "text",
    }
    raise InputError(f"input {name!r} must be {hints[kind]}, got {_shown(value)}")


def _json(name: str, text: str) -> Any:
    """``text`` read as strict JSON: ``NaN`` and ``Infinity`` (which Python's reader takes, and a
    run's stored JSON cannot hold) and a key written twice (whose first value would be dropped
    unseen) are refused in one line; other malformed text raises ``ValueError``."""

    def constant(word: str) -> Any:
        raise InputError(_not_finite(name))

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, item in items:
            if key in found:
                raise InputError(f"input {name!r} writes the key {key!r} twice; write it once")
            found[key] = item
        return found

    return json.loads(text, parse_constant=constant, object_pairs_hook=pairs)


def _not_finite(name: str) -> str:
    return (
        f"input {name!r} holds NaN or infinity, which a run cannot store;"
        " give a number or null instead"
    )


def _shown(value: Any) -> str:
    """``value`` as a message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def check_input_text(name: str, text: str, *, json_text: bool) -> None:
    """Refuse ``text`` (a value as typed) that is too long or — when it is read as JSON
    (``json_text``) — nests too deep, measured before anything parses it."""
    if len(text) > MAX_INPUT_CHARS:
        raise InputError(_too_long(name, len(text)))
    if _LONE_SURROGATE.search(text):
        raise InputError(_not_text(name))
    if not json_text:
        return
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_INPUT_DEPTH:
        raise InputError(_too_deep(name, deepest))


def check_input_value(name: str, spec: InputSpec, value: Any) -> None:
    """Refuse a value that nests deeper or is longer (its strings and items counted) than an
    input may be: text as :func:`check_input_text` measures it, other values walked without
    recursion."""
    if isinstance(value, str):
        check_input_text(name, value, json_text=spec.type in ("list", "dict"))
        return
    size = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: list[Any] = [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:
            if isinstance(item, str) and _LONE_SURROGATE.search(item):
                raise InputError(_not_text(name))
            if isinstance(item, float) and not math.isfinite(item) and depth > 0:
                raise InputError(_not_finite(name))
            size += len(str(item))
            children = []
        if children and depth + 1 > MAX_INPUT_DEPTH:
            raise InputError(_too_deep(name, depth + 1, exactly=False))
        size += len(children) + 1
        if size > MAX_INPUT_CHARS:
            raise InputError(_too_long(name, size, exactly=False))
        stack.extend((child, depth + 1) for child in children)


def _not_text(name: str) -> str:
    return (
        f"input {name!r} is not UTF-8 text (it holds a byte no character is made of);"
        " give it again as UTF-8"
    )


def _too_deep(name: str, depth: int, *, exactly: bool = True) -> str:
    levels = f"{depth} levels" if exactly else f"more than {MAX_INPUT_DEPTH} levels"
    return f"input {name!r} nests {levels} deep; an input may nest {MAX_INPUT_DEPTH} — flatten it"


def _too_long(name: str, size: int, *, exactly: bool = True) -> str:
    length = f"{size:,} characters" if exactly else f"more than {MAX_INPUT_CHARS:,} characters"
    return (
        f"input {name!r} is {length} long; an input may be {MAX_INPUT_CHARS:,}"
        " — pass a shorter value"
    )


def check_bounds(name: str, spec: InputSpec, value: Any) -> None:
    """Refuse a converted value outside the declared choices, min, max or max_length
    (InputError)."""
    if value is None:
        return
    if spec.choices is not None and value not in spec.choices:
        choices = ", ".join(map(str, spec.choices))
        raise InputError(f"input {name!r} must be one of {choices}, got {_shown(value)}")
    if spec.max_length is not None and isinstance(value, str) and len(value) > spec.max_length:
        raise InputError(
            f"input {name!r} must be at most {spec.max_length:,} characters long,"
            f" got {len(value):,} characters"
        )
    if spec.type not in ("int", "float") or isinstance(value, bool):
        return
    if spec.min is not None and value < spec.min:
        raise InputError(f"input {name!r} must be at least {spec.min:g}, got {_shown(value)}")
    if spec.max is not None and value > spec.max:
        raise InputError(f"input {name!r} must be at most {spec.max:g}, got {_shown(value)}")


def resolve_inputs(wf: WorkflowDefinition, given: Mapping[str, Any]) -> dict[str, Any]:
    """Declared inputs with defaults applied and values converted; raises InputError."""
    unknown = sorted(set(given) - set(wf.inputs))
    if unknown:
        declared = ", ".join(sorted(wf.inputs)) or "none"
        raise InputError(f"workflow {wf.name!r} has no input {unknown[0]!r} (declared: {declared})")
    resolved: dict[str, Any] = {}
    for name, spec in wf.inputs.items():
        if name in given and given[name] is not None:
            check_input_value(name, spec, given[name])
            value = _convert(name, spec, given[name])
        elif spec.default is not None:
            value = spec.default
        elif spec.required:
            raise InputError(
                f"workflow {wf.name!r} needs input {name!r}: pass --input {name}=VALUE"
            )
        else:
            value = None
        check_bounds(name, spec, value)
        resolved[name] = value
    return resolved


def parse_assignments(pairs: list[str]) -> dict[str, str]:
    """``["key=value", ...]`` from the command line; raises InputError on a pair without ``=``."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--input {pair!r} is not key=value")
        if key.strip() in values:
            raise InputError(f"--input {key.strip()} is given twice; give it once")
        values[key.strip()] = value
    return values
