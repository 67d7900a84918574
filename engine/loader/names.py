"""How the loader names things in its messages: identifiers, value types, close matches."""

from __future__ import annotations

import difflib
import re
import typing
import unicodedata
from typing import Any

from engine.conditions import CEL_RESERVED_WORDS
from engine.spec import IDENTIFIER_PATTERN

_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def is_identifier(value: Any) -> bool:
    """A name CEL can read: the identifier pattern, and not a CEL reserved word."""
    return (
        isinstance(value, str)
        and bool(_IDENTIFIER.match(value))
        and value not in CEL_RESERVED_WORDS
    )


def identifier_problem(value: Any, what: str) -> str:
    """Why ``value`` cannot be a step id (or other name CEL must read)."""
    if not isinstance(value, str):
        return f"{what} must be a string, got {type_name(value)}"
    if value in CEL_RESERVED_WORDS and _IDENTIFIER.match(value):
        return f"{what} '{value}' is a CEL reserved word; choose another name"
    folded = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
    suggestion = re.sub(r"[^a-z0-9_]+", "_", folded.lower()).strip("_") or "step"
    if not suggestion[0].isalpha():
        suggestion = f"s_{suggestion}"
    kept = sum(c.isalnum() for c in folded)
    if kept < sum(c.isalnum() for c in value):
        example = suggestion if kept else "step_1"
        return (
            f"{what} '{value}' is not an identifier ([a-z][a-z0-9_]*): names are written in"
            f" ASCII letters, digits and _; spell it in ASCII, e.g. '{example}'"
        )
    why = ""
    operator = re.search(r"[-+*/%.]", value)
    if operator:
        left, right = value[: operator.start()], value[operator.end() :]
        kind = {
            "-": "a subtraction",
            "+": "an addition",
            "*": "a multiplication",
            "/": "a division",
            "%": "a modulo",
            ".": "a field access",
        }[operator.group()]
        why = f" — CEL would read '{value}' as {kind} ({left} {operator.group()} {right})"
    elif value[:1].isdigit():
        why = " — it must start with a letter"
    elif value != value.lower():
        why = " — use lower case"
    return f"{what} '{value}' is not an identifier ([a-z][a-z0-9_]*){why}; use '{suggestion}'"


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def closest(name: str, options: typing.Iterable[str]) -> str:
    match = difflib.get_close_matches(name, list(options), n=1, cutoff=0.75)
    return f" (did you mean '{match[0]}'?)" if match else ""


def loc_text(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
