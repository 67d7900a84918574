"""Pydantic validation errors reported at the YAML position they point to.

A value a union types (``max_step_runs: int | Literal["auto"]``) fails once per branch, each
error's location ending in the branch's tag (``int``, ``literal['auto']``) where the YAML has
no such key: those are one problem at the value, naming what each branch takes.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.loader.finite import not_finite, refused_as_not_finite
from engine.loader.located_yaml import Node
from engine.loader.names import closest, identifier_problem, loc_text, type_name
from engine.loader.problems import Problems


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
        if refused_as_not_finite(detail):
            problems.add(target, f"{prefix}{not_finite(where, detail.get('input'))}{suffix}")
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
    """``details`` with each union's branch errors at one value made one error there: a finite
    number's refusal when a branch refused the value as not finite, else "Input should be A or
    B" from the branches' messages. A lone error past the YAML (a mapping key's own check,
    ``[key]``) is not a union's and stays as it is."""
    joined: list[Any] = []
    branches: dict[tuple[Any, ...], list[Any]] = {}
    for detail in details:
        loc = tuple(detail.get("loc", ()))
        at = len(loc) if detail.get("type") == "missing" else _value_depth(node, loc)
        if at == len(loc):
            joined.append(detail)
            continue
        field = loc[:at]
        if field not in branches:
            branches[field] = []
            joined.append(field)
        branches[field].append(detail)
    return [
        item
        if not isinstance(item, tuple)
        else _one_error(item, branches[item])
        if len(branches[item]) > 1
        else branches[item][0]
        for item in joined
    ]


def _value_depth(node: Node, loc: tuple[Any, ...]) -> int:
    """How many parts of ``loc`` lead to a place in the YAML: all of them, unless one names
    nothing there (a scalar has no parts; only a missing key is reported where nothing is
    written, and those are not asked about): what follows is a union's branch."""
    current = node
    for depth, part in enumerate(loc):
        child = current.get(part) if isinstance(part, (str, int)) else None
        if child is None:
            return depth
        current = child
    return len(loc)


def _one_error(field: tuple[Any, ...], details: list[Any]) -> Any:
    not_finite_branch = [d for d in details if refused_as_not_finite(d)]
    if not_finite_branch:
        return {**not_finite_branch[0], "loc": field}
    takes = [str(d.get("msg", "")).removeprefix("Input should be ") for d in details]
    if all(str(d.get("msg", "")).startswith("Input should be ") for d in details):
        message = "Input should be " + " or ".join(t.split(",")[0] for t in takes)
    else:
        message = "; or ".join(str(d.get("msg", "")) for d in details)
    return {**details[0], "loc": field, "msg": message, "type": "union"}


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
