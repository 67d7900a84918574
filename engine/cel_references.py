"""What a CEL expression reads and calls, found in its parse tree (engine/conditions.py compiles).

The loader checks every name a condition reads against the workflow (a step that does not
exist, an output no step gives) and every function it calls against the ones CEL knows; both
come from walking cel-python's lark tree here, apart from the module that evaluates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lark

_BINDING_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
"""Macros whose first argument names a variable (``x`` in ``l.all(x, x > 0)``), not a reference."""


@dataclass(frozen=True)
class Reference:
    """A dotted name an expression reads, e.g. ``("steps", "draft", "outputs", "score")``."""

    path: tuple[str, ...]
    column: int
    """1-based column of the reference within the expression."""

    def __str__(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class FunctionCall:
    name: str
    column: int


def _reference_path(node: lark.Tree[Any]) -> list[str] | None:
    """The dotted path of a ``member``/``primary`` chain rooted at a name, else None."""
    suffix: list[str] = []
    current: Any = node
    while isinstance(current, lark.Tree):
        if len(current.children) == 1 and current.data not in ("ident", "dot_ident", "literal"):
            current = current.children[0]
        elif current.data == "member_dot":
            suffix.append(str(current.children[1]))
            current = current.children[0]
        elif current.data == "member_index":
            index = _string_literal(current.children[1])
            if index is None:
                return None
            suffix.append(index)
            current = current.children[0]
        elif current.data in ("ident", "dot_ident"):
            suffix.append(str(current.children[0]))
            return list(reversed(suffix))
        else:
            return None
    return None


def _string_literal(node: Any) -> str | None:
    """The value of an expression that is nothing but a plain string literal."""
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data != "literal":
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "literal":
        token = node.children[0]
        if isinstance(token, lark.Token) and token.type == "STRING_LIT":
            text = str(token.value)
            if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
                return text[1:-1]
    return None


def _bound_name(node: Any) -> str | None:
    path = _reference_path(node) if isinstance(node, lark.Tree) else None
    return path[0] if path and len(path) == 1 else None


def _column(node: lark.Tree[Any]) -> int:
    meta = getattr(node, "meta", None)
    return int(getattr(meta, "column", 1) or 1) if meta is not None and not meta.empty else 1


def collect(tree: lark.Tree[Any]) -> tuple[list[Reference], list[FunctionCall]]:
    """References and calls in ``tree``; names bound by macros (``x`` in ``l.all(x, ...)``) are left out."""
    references: list[Reference] = []
    calls: list[FunctionCall] = []
    stack: list[tuple[Any, frozenset[str]]] = [(tree, frozenset())]
    while stack:
        node, bound = stack.pop()
        if not isinstance(node, lark.Tree):
            continue
        if node.data in ("member", "primary"):
            path = _reference_path(node)
            if path is not None:
                if path[0] not in bound:
                    references.append(Reference(tuple(path), _column(node)))
                continue
        if node.data in ("member_dot_arg", "ident_arg", "dot_ident_arg"):
            if node.data == "member_dot_arg":
                target, name_token = node.children[0], node.children[1]
                arguments = node.children[2] if len(node.children) > 2 else None
                stack.append((target, bound))
            else:
                name_token = node.children[0]
                arguments = node.children[1] if len(node.children) > 1 else None
            name = str(name_token)
            calls.append(FunctionCall(name, _column(node)))
            args = list(arguments.children) if isinstance(arguments, lark.Tree) else []
            inner = bound
            if name in _BINDING_MACROS and node.data == "member_dot_arg" and args:
                variable = _bound_name(args[0])
                if variable is not None:
                    inner = bound | {variable}
                    args = args[1:]
            for argument in args:
                stack.append((argument, inner))
            continue
        for child in node.children:
            stack.append((child, bound))
    references.sort(key=lambda r: r.column)
    calls.sort(key=lambda c: c.column)
    return references, calls
