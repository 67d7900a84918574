"""The workflow's CEL expressions: compiled when read, kept for the graph-stage checks."""

from __future__ import annotations

from dataclasses import dataclass

from engine.conditions import (
    KNOWN_FUNCTIONS,
    CelSyntaxError,
    CompiledExpr,
    compile_expr,
    result_type,
    unknown_functions,
)
from engine.loader.located_yaml import Node
from engine.loader.names import closest
from engine.loader.problems import Problems
from engine.spec import StepSpec


@dataclass
class Expression:
    """One CEL expression of the definition, for the graph-stage reference checks."""

    compiled: CompiledExpr
    node: Node
    where: str
    step: StepSpec | None
    routing: bool = False
    condition: bool = False
    """Read as true or false (``when``, conditions, ``terminate_when``, ``detour.when``)."""


def compile_checked(
    problems: Problems,
    expressions: list[Expression],
    expr: str,
    at: Node,
    where: str,
    step: StepSpec | None,
    *,
    routing: bool = False,
    condition: bool = False,
) -> CompiledExpr | None:
    """Compile ``expr`` written at ``at``; report syntax errors, unknown functions and (for a
    ``condition``) a result that can never be true or false; keep it in ``expressions`` for
    the reference checks. Returns it compiled, or None when it does not compile."""
    try:
        compiled = compile_expr(expr)
    except CelSyntaxError as error:
        problems.add(
            column_in(at, error.column), f"{where}: {error.message} in {expr!r}; fix the expression"
        )
        return None
    for call in unknown_functions(compiled):
        problems.add(
            column_in(at, call.column),
            f"{where}: unknown function '{call.name}' in {expr!r};"
            f" use a CEL function{closest(call.name, KNOWN_FUNCTIONS) or ' (see the README)'}",
        )
    kind = result_type(compiled) if condition else None
    if kind not in (None, "bool"):
        problems.add(
            at,
            f"{where}: {expr!r} gives {_A[kind]}, never true or false; write a condition,"
            " e.g. a comparison (x > 0, x == 'done') or has(...)",
        )
    expressions.append(Expression(compiled, at, where, step, routing, condition))
    return compiled


_A = {
    "number": "a number",
    "string": "text",
    "bytes": "bytes",
    "list": "a list",
    "map": "a map",
    "null": "null",
}


def column_in(node: Node | None, column: int) -> tuple[int, int] | Node | None:
    """Where column ``column`` of an expression is in the file (exact for one-line scalars)."""
    if node is None or node.style in ("|", ">"):
        return node
    quote = 1 if node.style in ('"', "'") else 0
    return node.line, node.column + quote + column - 1
