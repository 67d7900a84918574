"""Pydantic validation errors reported at the YAML position they point to.

A value a union types (``max_step_runs: int | Literal["auto"]``) fails once per branch, each
error's location ending in the branch's tag (``int``, ``literal['auto']``) where the YAML has
no such key: those are one problem at the value, naming what each branch takes.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.loader.finite import not_finite
from engine.loader.located_yaml import Node
from engine.loader.names import closest, identifier_problem, loc_text, type_name
from engine.loader.problems import Problems
from engine.spec import BOOLEAN_FOR_NUMBER


def report_validation(
    problems: Problems,
    error: ValidationError,
    node: Node,
    model: type[BaseModel],
    *,
    prefix: str = "",
    suffix: str = "",
    skip_patterns: bool = False,
) -> None:
    details = _union_branches_joined(error.errors(), node)
    for detail in details:
        loc = tuple(detail.get("loc", ()))
        kind = detail.get("type", "")
        if kind == "string_pattern_mismatch" and skip_patterns:
            continue
        target, key_mark = _locate(node, loc, kind)
        where = loc_text(loc)
        if kind == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            expected = f"; expected one of: {', '.join(parent.model_fields)}" if parent else ""
            close = closest(str(loc[-1]), parent.model_fields) if parent else ""
            message = f"unknown key '{loc[-1]}'{close}{expected}"
            if len(loc) > 1:
                message = f"{loc_text(loc[:-1])}: {message}"
            problems.add(key_mark, f"{prefix}{message}{suffix}")
            continue
        if kind == "missing":
            problems.add(target, f"{prefix}missing required key '{where}'; add it{suffix}")
            continue
        if kind == "finite_number":
            problems.add(target, f"{prefix}{not_finite(where, detail.get('input'))}{suffix}")
            continue
        if kind == BOOLEAN_FOR_NUMBER:
            problems.add(target, f"{prefix}{where}: {detail.get('msg')}{suffix}")
            continue
        if kind == "string_pattern_mismatch":
            message = identifier_problem(detail.get("input"), where)
        else:
            received = detail.get("input")
            got = "" if isinstance(received, (dict, list)) else f", got {received!r}"
            if kind == "string_type" and isinstance(received, (bool, int, float)) and loc:
                written = str(received).lower() if isinstance(received, bool) else str(received)
                problems.add(
                    target,
                    f"{prefix}{where}: YAML reads this value as {type_name(received)}, not text"
                    f" (yes, no, on and off are booleans too); put it in quotes, e.g."
                    f' {loc[-1]}: "{written}"{suffix}',
                )
                continue
            text = str(detail.get("msg", "invalid value")).removeprefix("Value error, ")
            message = (f"{where}: {text}{got}" if where else text) + "; correct the value"
        problems.add(target, f"{prefix}{message}{suffix}")


def _union_branches_joined(details: list[Any], node: Node) -> list[Any]:
    """``details``, in their order, with a union's branch errors at one value made one error
    there (see the module's docstring)."""
    placed: list[tuple[int, Any]] = []
    branches: dict[tuple[Any, ...], list[tuple[int, Any]]] = {}
    for order, detail in enumerate(details):
        loc = tuple(detail.get("loc", ()))
        if _is_a_branch_error(node, detail, loc):
            branches.setdefault(loc[:-1], []).append((order, detail))
        else:
            placed.append((order, detail))
    for field, errors in branches.items():
        if len(errors) > 1:
            placed.append((errors[0][0], _one_error(field, [detail for _, detail in errors])))
        else:
            placed.extend(errors)
    return [detail for _, detail in sorted(placed, key=lambda item: item[0])]


def _is_a_branch_error(node: Node, detail: Any, loc: tuple[Any, ...]) -> bool:
    """Whether the error is a union branch's refusal of a written value: its location is the
    value's and one part more, which names nothing in the YAML (the branch's tag). An error
    deeper inside a branch, a missing key (the only error at a place nothing is written) and a
    lone error past the YAML (a mapping key's own check, ``[key]``) are not."""
    return (
        detail.get("type") != "missing"
        and bool(loc)
        and _names_a_place(node, loc[:-1])
        and not _names_a_place(node, loc)
    )


def _names_a_place(node: Node, loc: tuple[Any, ...]) -> bool:
    """Whether ``loc`` leads to a value written in the YAML."""
    current = node
    for part in loc:
        child = current.get(part) if isinstance(part, (str, int)) else None
        if child is None:
            return False
        current = child
    return True


SHOULD_BE = "Input should be "
VALUE_REFUSALS = ("finite_number", BOOLEAN_FOR_NUMBER)
"""Errors that say what is wrong with the value itself, whatever the branch: one is the problem."""


def _one_error(field: tuple[Any, ...], errors: list[Any]) -> Any:
    """One error at ``field`` for its union's branch ``errors``: a branch's refusal of the value
    itself (not finite, a boolean) when there is one, else what each branch takes ("Input should be a
    valid integer or 'auto'"), or each branch's message when one is not worded so."""
    refused = [e for e in errors if e.get("type") in VALUE_REFUSALS]
    if refused:
        return {**refused[0], "loc": field}
    messages = [str(e.get("msg", "")) for e in errors]
    if all(m.startswith(SHOULD_BE) for m in messages):
        message = SHOULD_BE + " or ".join(_what_it_takes(m) for m in messages)
    else:
        message = "; or ".join(messages)
    return {**errors[0], "loc": field, "msg": message, "type": "union"}


def _what_it_takes(message: str) -> str:
    """ "a valid integer" of "Input should be a valid integer, unable to parse string as an
    integer": what the branch takes, without why this value is not it."""
    taken = message.removeprefix(SHOULD_BE)
    for reason in (", got ", ", unable ", ", input "):
        taken = taken.split(reason)[0]
    return taken


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that validates the mapping at ``loc`` (for 'expected one of')."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            if info is None:
                return None
            current = _unwrap(info.annotation)
        elif current is dict:
            continue
        else:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    for argument in typing.get_args(annotation) or ():
        found = _unwrap(argument)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    origin = typing.get_origin(annotation)
    if origin is dict:
        return dict
    return annotation


def _locate(node: Node, loc: tuple[Any, ...], kind: str) -> tuple[Node, tuple[int, int]]:
    """The node a pydantic error location points at, and the position of its key."""
    current = node
    key_mark = (node.line, node.column)
    for part in loc:
        child = current.get(part) if isinstance(part, (str, int)) else None
        if child is None:
            if isinstance(part, str) and current.is_map and part in current.keys:
                key_mark = current.key_mark(part)
            break
        if isinstance(part, str):
            key_mark = current.key_mark(part)
        else:
            key_mark = (child.line, child.column)
        current = child
    if kind == "extra_forbidden" and loc and current.is_map and str(loc[-1]) in current.keys:
        key_mark = current.key_mark(str(loc[-1]))
    return current, key_mark


# == public API ===============================================================
