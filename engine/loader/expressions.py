"""The workflow's CEL expressions: compiled when read, kept for the graph-stage checks."""

from __future__ import annotations

from dataclasses import dataclass

from engine.conditions import CelSyntaxError, CompiledExpr, compile_expr, unknown_functions
from engine.loader.located_yaml import Node
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


def compile_checked(
    problems: Problems,
    expressions: list[Expression],
    expr: str,
    at: Node,
    where: str,
    step: StepSpec | None,
    *,
    routing: bool = False,
) -> None:
    """Compile ``expr`` written at ``at``; report syntax errors and unknown functions, or keep
    it in ``expressions`` for the reference checks."""
    try:
        compiled = compile_expr(expr)
    except CelSyntaxError as error:
        problems.add(column_in(at, error.column), f"{where}: {error.message} in {expr!r}")
        return
    for call in unknown_functions(compiled):
        problems.add(
            column_in(at, call.column),
            f"{where}: unknown function '{call.name}' in {expr!r}",
        )
    expressions.append(Expression(compiled, at, where, step, routing))


def column_in(node: Node | None, column: int) -> tuple[int, int] | Node | None:
    """Where column ``column`` of an expression is in the file (exact for one-line scalars)."""
    if node is None or node.style in ("|", ">"):
        return node
    quote = 1 if node.style in ('"', "'") else 0
    return node.line, node.column + quote + column - 1
