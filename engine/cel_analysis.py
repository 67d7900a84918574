"""What a CEL expression reads, calls and yields, read from its parse tree without
evaluating it — what the loader checks (references to steps, unknown functions, a ``when``
that can never be true or false).

Part of the CEL layer (engine/conditions.py is its API).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import lark
from celpy.evaluation import base_functions

from engine import cel_parser

MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})
_BINDING_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})

KNOWN_FUNCTIONS = (
    frozenset(
        name for name in base_functions if not name.startswith("_") and not name.endswith("_")
    )
    | MACROS
)
"""Function and method names an expression may call."""


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


_Part = tuple[lark.Token, bool]
"""A part of a dotted path: its token, and whether its quotes are taken off (``x['a']``)."""


def _reference_path(node: lark.Tree[Any]) -> list[_Part] | None:
    """The dotted path of a ``member``/``primary`` chain rooted at a name, else None."""
    suffix: list[_Part] = []
    current: Any = node
    while isinstance(current, lark.Tree):
        if len(current.children) == 1 and current.data not in ("ident", "dot_ident", "literal"):
            current = current.children[0]
        elif current.data == "member_dot":
            suffix.append((_leaf(current.children[1]), False))
            current = current.children[0]
        elif current.data == "member_index":
            index = _string_literal(current.children[1])
            if index is None:
                return None
            suffix.append((index, True))
            current = current.children[0]
        elif current.data in ("ident", "dot_ident"):
            suffix.append((_leaf(current.children[0]), False))
            return list(reversed(suffix))
        else:
            return None
    return None


def _leaf(child: Any) -> lark.Token:
    """A child the grammar makes a token (a name)."""
    return cast(lark.Token, child)


def _string_literal(node: Any) -> lark.Token | None:
    """The token of an expression that is nothing but a plain string literal."""
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data != "literal":
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "literal":
        token = node.children[0]
        if isinstance(token, lark.Token) and token.type == "STRING_LIT" and _quoted(token):
            return token
    return None


def _quoted(token: lark.Token) -> bool:
    text = str(token.value)
    return len(text) >= 2 and text[0] == text[-1] and text[0] in "'\""


def _text(part: _Part) -> str:
    token, quoted = part
    return str(token.value)[1:-1] if quoted else str(token.value)


def _bound_name(node: Any) -> str | None:
    path = _reference_path(node) if isinstance(node, lark.Tree) else None
    return _text(path[0]) if path and len(path) == 1 else None


_BOUND_MACRO_ARGS = 2
"""What ``all``, ``exists``, ``exists_one``, ``filter`` and ``map`` take: a name and an
expression (cel-python has no three-argument ``map``)."""


def _single(node: Any) -> Any:
    """``node`` with the rules that only pass one child on taken off."""
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data != "literal":
        node = node.children[0]
    return node


def macro_misuse(tree: lark.Tree[Any]) -> tuple[str, lark.Tree[Any]] | None:
    """A macro written in a form cel-python only refuses when it evaluates (a
    traceback's worth of parse tree for a message), with its node; None when there is none.

    ``l.exists(x, p)``, ``all``, ``exists_one``, ``filter`` and ``map`` take a name and an
    expression; ``has()`` takes one field selection (``has(steps.a.outputs.x)``).
    """
    for node in tree.iter_subtrees():
        if node.data not in ("member_dot_arg", "ident_arg"):
            continue
        on_a_value = node.data == "member_dot_arg"
        name = str(node.children[1] if on_a_value else node.children[0])
        arguments = (
            node.children[2 if on_a_value else 1] if len(node.children) > 1 + on_a_value else None
        )
        args = list(arguments.children) if isinstance(arguments, lark.Tree) else []
        if on_a_value and name in _BINDING_MACROS:
            if len(args) != _BOUND_MACRO_ARGS or _bound_name(args[0]) is None:
                return (
                    f"{name}() takes a name and an expression (list.{name}(x, …), x naming "
                    "each element); write it that way",
                    node,
                )
        elif name in _BINDING_MACROS:
            return f"{name}() is called on a list (list.{name}(x, …)); write it that way", node
        elif name == "has" and not on_a_value:
            if len(args) != 1 or getattr(_single(args[0]), "data", None) != "member_dot":
                return (
                    "has() takes one field selection, e.g. has(steps.a.outputs.x); write it "
                    "that way",
                    node,
                )
    return None


def _walk(
    tree: lark.Tree[Any],
) -> tuple[list[tuple[list[_Part], lark.Tree[Any]]], list[tuple[lark.Token, lark.Tree[Any]]]]:
    """The references (path, node) and calls (name, node) in ``tree``; names bound by macros
    (``x`` in ``l.all(x, ...)``) are left out."""
    references: list[tuple[list[_Part], lark.Tree[Any]]] = []
    calls: list[tuple[lark.Token, lark.Tree[Any]]] = []
    stack: list[tuple[Any, frozenset[str]]] = [(tree, frozenset())]
    while stack:
        node, bound = stack.pop()
        if not isinstance(node, lark.Tree):
            continue
        if node.data in ("member", "primary"):
            path = _reference_path(node)
            if path is not None:
                if _text(path[0]) not in bound:
                    references.append((path, node))
                continue
        if node.data in ("member_dot_arg", "ident_arg", "dot_ident_arg"):
            if node.data == "member_dot_arg":
                target, name_token = node.children[0], node.children[1]
                arguments = node.children[2] if len(node.children) > 2 else None
                stack.append((target, bound))
            else:
                name_token = node.children[0]
                arguments = node.children[1] if len(node.children) > 1 else None
            calls.append((_leaf(name_token), node))
            args = list(arguments.children) if isinstance(arguments, lark.Tree) else []
            inner = bound
            if str(name_token) in _BINDING_MACROS and node.data == "member_dot_arg" and args:
                variable = _bound_name(args[0])
                if variable is not None:
                    inner = bound | {variable}
                    args = args[1:]
            for argument in args:
                stack.append((argument, inner))
            continue
        for child in node.children:
            stack.append((child, bound))
    return references, calls


def _column(node: lark.Tree[Any]) -> int:
    meta = getattr(node, "meta", None)
    return int(getattr(meta, "column", 1) or 1) if meta is not None and not meta.empty else 1


def collect(tree: lark.Tree[Any]) -> tuple[list[Reference], list[FunctionCall]]:
    """References and calls in ``tree``, in column order; names bound by macros (``x`` in
    ``l.all(x, ...)``) are left out."""
    found, called = _walk(tree)
    references = [
        Reference(tuple(_text(part) for part in path), _column(node)) for path, node in found
    ]
    calls = [FunctionCall(str(name), _column(node)) for name, node in called]
    references.sort(key=lambda r: r.column)
    calls.sort(key=lambda c: c.column)
    return references, calls


# -- the same findings for every text of a shape ------------------------------------


@dataclass(frozen=True)
class Analysis:
    """What one text reads, calls and yields, with each name kept as the position of the
    token it is read from: the same for every text of its shape whose decisive tokens
    (:func:`_decisive`) read the same, so it is worked out once for all of them."""

    references: tuple[tuple[tuple[tuple[int, bool], ...], int | None], ...]
    """Per reference: (token position, quotes taken off) per part, the column's token."""
    calls: tuple[tuple[int, int | None], ...]
    """Per call: its name's token position, the column's token."""
    result: str | None
    misuse: tuple[str, int | None] | None = None
    """A macro written in a form that cannot evaluate (:func:`macro_misuse`): what to say,
    and the column's token."""

    def misuse_column(self, tokens: tuple[lark.Token, ...]) -> int:
        """The 1-based column of :attr:`misuse` in the text whose tokens are ``tokens``."""
        at = self.misuse[1] if self.misuse is not None else None
        return int(tokens[at].column or 1) if at is not None else 1

    def read(
        self, tokens: tuple[lark.Token, ...]
    ) -> tuple[tuple[Reference, ...], tuple[FunctionCall, ...]]:
        """The references and calls of the text whose tokens are ``tokens``."""

        def column(index: int | None) -> int:
            return int(tokens[index].column or 1) if index is not None else 1

        references = sorted(
            (
                Reference(tuple(_text((tokens[i], quoted)) for i, quoted in parts), column(at))
                for parts, at in self.references
            ),
            key=lambda r: r.column,
        )
        calls = sorted(
            (FunctionCall(str(tokens[name].value), column(at)) for name, at in self.calls),
            key=lambda c: c.column,
        )
        return tuple(references), tuple(calls)


def analyse(tree: lark.Tree[Any], tokens: tuple[lark.Token, ...]) -> Analysis:
    """``tree``'s findings, as positions in ``tokens`` (its leaves are among them)."""
    starts = {token.start_pos: index for index, token in enumerate(tokens)}

    def at(node: lark.Tree[Any]) -> int | None:
        meta = node.meta
        return None if meta.empty else starts[meta.start_pos]

    found, called = _walk(tree)
    misuse = macro_misuse(tree)
    return Analysis(
        tuple(
            (tuple((starts[token.start_pos], quoted) for token, quoted in path), at(node))
            for path, node in found
        ),
        tuple((starts[name.start_pos], at(node)) for name, node in called),
        result_type(tree),
        None if misuse is None else (misuse[0], at(misuse[1])),
    )


def _decisive(tree: lark.Tree[Any], tokens: tuple[lark.Token, ...]) -> tuple[int, ...]:
    """Positions of the tokens whose text the findings depend on, beyond the shape: names
    (a path's first, a bound variable, a function or method called) and string literals
    (quoted or not); every other token's text is only copied into a finding."""
    starts = {token.start_pos: index for index, token in enumerate(tokens)}
    decisive: set[int] = set()
    for node in tree.iter_subtrees():
        if node.data in ("ident", "dot_ident", "ident_arg", "dot_ident_arg"):
            decisive.add(starts[_leaf(node.children[0]).start_pos])
        elif node.data == "member_dot_arg":
            decisive.add(starts[_leaf(node.children[1]).start_pos])
    decisive.update(i for i, token in enumerate(tokens) if token.type == "STRING_LIT")
    return tuple(sorted(decisive))


_DEPTHS: dict[cel_parser.Shape, int] = {}
_DECISIVE: dict[cel_parser.Shape, tuple[int, ...]] = {}
_ANALYSES: dict[tuple[cel_parser.Shape, tuple[Any, ...]], Analysis] = {}
_MAX_ANALYSES = 16384
"""Findings kept at most (a few hundred bytes each)."""


def depth_of(parsed: cel_parser.Parsed) -> int:
    """The depth of ``parsed``'s tree: measured once per shape."""
    if parsed.shape is None:
        return tree_depth(parsed.tree)
    depth = _DEPTHS.get(parsed.shape)
    if depth is None:
        depth = _DEPTHS[parsed.shape] = tree_depth(parsed.tree)
    return depth


def analysis_of(parsed: cel_parser.Parsed) -> Analysis:
    """``parsed``'s findings: worked out once per shape and decisive tokens."""
    shape = parsed.shape
    if shape is None:
        return analyse(parsed.tree, parsed.tokens)
    tokens = parsed.tokens
    decisive = _DECISIVE.get(shape)
    if decisive is None:
        decisive = _DECISIVE[shape] = _decisive(parsed.tree, tokens)
    key = (
        shape,
        tuple(
            _quoted(tokens[i]) if tokens[i].type == "STRING_LIT" else str(tokens[i].value)
            for i in decisive
        ),
    )
    analysis = _ANALYSES.get(key)
    if analysis is None:
        analysis = analyse(parsed.tree, tokens)
        if len(_ANALYSES) < _MAX_ANALYSES:
            _ANALYSES[key] = analysis
    return analysis


def tree_depth(tree: lark.Tree[Any]) -> int:
    deepest = 0
    stack: list[tuple[lark.Tree[Any], int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, lark.Tree))
    return deepest


_BOOL_METHODS = frozenset({"startsWith", "endsWith", "contains", "matches", "exists", "all"})
_FUNCTION_TYPES = {
    "has": "bool",
    "size": "number",
    "int": "number",
    "uint": "number",
    "double": "number",
    "string": "string",
}
_LITERAL_TYPES = {
    "BOOL_LIT": "bool",
    "NULL_LIT": "null",
    "STRING_LIT": "string",
    "MLSTRING_LIT": "string",
    "BYTES_LIT": "bytes",
    "INT_LIT": "number",
    "UINT_LIT": "number",
    "FLOAT_LIT": "number",
}


def result_type(tree: lark.Tree[Any]) -> str | None:
    """What the expression yields, when its outermost operator says so without evaluating
    it: "bool", "number", "string", "bytes", "list", "map" or "null"; None when it depends
    on values (a field, an index, a ternary). The loader refuses a ``when`` that can never
    be a boolean this way."""
    node: Any = tree
    while isinstance(node, lark.Tree):
        children = node.children
        first = children[0] if children else None
        head = first.data if isinstance(first, lark.Tree) else None
        if node.data == "expr" and len(children) > 1:
            return None  # a ternary: either branch
        if node.data in ("conditionalor", "conditionaland") and len(children) > 1:
            return "bool"
        if node.data == "relation" and head is not None and head.startswith("relation_"):
            return "bool"
        if node.data == "addition" and head is not None and head.startswith("addition_"):
            return None if head == "addition_add" else "number"  # + also joins text and lists
        if node.data == "multiplication" and head is not None and head.startswith("multipl"):
            return "number"
        if node.data == "unary" and head in ("unary_not", "unary_neg"):
            return "bool" if head == "unary_not" else "number"
        if node.data == "member_dot_arg":
            method = children[1] if len(children) > 1 else None
            return "bool" if str(method) in _BOOL_METHODS else None
        if node.data in ("member_dot", "member_index", "ident", "dot_ident", "dot_ident_arg"):
            return None
        if node.data == "ident_arg":
            return _FUNCTION_TYPES.get(str(first))
        if node.data == "literal":
            return _LITERAL_TYPES.get(getattr(first, "type", ""))
        if node.data == "list_lit":
            return "list"
        if node.data == "map_lit":
            return "map"
        if len(children) != 1 and node.data != "paren_expr":
            return None
        node = first
    return None
