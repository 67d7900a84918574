"""CEL conditions (DESIGN §4): the API of the CEL layer, the only code that talks to cel-python.

The layer's modules: this one (compiling, evaluating, the activation), engine/cel_parser.py
(parsing, shared by shape), engine/cel_values.py (values in and out, the numeric policy),
engine/cel_analysis.py (what an expression reads, calls and yields) and engine/cel_budget.py
(the cost limit of an evaluation). Every cel-python trap is handled in them and nowhere else:

- **One numeric policy**: every number is a double (engine/cel_values.py).
- **Wrapper types.** Activations are built from plain Python values here
  (``build_activation``), and results are converted back to plain Python
  (``bool``/``int``/``float``/``str``/``list``/``dict``/``None``).
- **Missing keys raise.** ``has(steps.x.outputs.field)`` is how a condition
  tests an optional output; an evaluation error is a ``CelEvaluationError``,
  and ``evaluate_bool`` turns it into "not matched" plus the message, which is
  what ADR-004 asks of routing (fall through, record the error).
- **No bound on evaluation**: an evaluation is counted and stopped
  (engine/cel_budget.py); going past the limit is an evaluation error like any other —
  in a ``when`` or a routing condition it counts as not matched, with the limit named.
- **The Environment changes the recursion limit** when created, so there is
  exactly one per process, created when this module is imported.

Compilation is cached by expression text, and texts of one shape share their parse; one
evaluation costs on the order of a hundred microseconds, so callers compile at load time
and evaluate only what a decision needs.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import celpy
import lark
import lark.exceptions
import re2
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, base_functions

from engine import cel_parser
from engine.cel_analysis import (
    KNOWN_FUNCTIONS,
    MACROS,
    FunctionCall,
    Reference,
    analysis_of,
    depth_of,
)
from engine.cel_budget import BoundedRunner, CostLimitExceeded, check_length
from engine.cel_values import (
    CEL_VALUE_TYPES,
    NUMERIC_FUNCTIONS,
    TEXT_LITERALS,
    double_literal,
    from_cel,
    literal_problem,
    rewrite_integer_literals,
    to_cel,
)

__all__ = [
    "CEL_RESERVED_WORDS",
    "CEL_TYPE_NAMES",
    "KNOWN_FUNCTIONS",
    "MACROS",
    "MAX_EXPRESSION_LENGTH",
    "MAX_TREE_DEPTH",
    "RUN_FIELDS",
    "STEP_VIEW_FIELDS",
    "TOP_LEVEL_NAMES",
    "CelEvaluationError",
    "CelSyntaxError",
    "CompiledExpr",
    "FunctionCall",
    "Reference",
    "StepView",
    "StepsMap",
    "build_activation",
    "compile_expr",
    "evaluate_bool",
    "from_cel",
    "result_type",
    "to_cel",
    "unknown_functions",
]

MAX_EXPRESSION_LENGTH = 4000
"""Longer texts are refused at compile time: conditions are one-liners, and the
parser's cost grows with the text."""

MAX_TREE_DEPTH = 250
"""Deeper parse trees are refused at compile time: cel-python evaluates
recursively, and a tree this deep (about two dozen nested parentheses) is far
from the recursion limit, so an expression that compiles also evaluates."""

TOP_LEVEL_NAMES = ("inputs", "steps", "outputs", "iteration", "run")
"""The names an activation defines; anything else a condition reads names nothing."""

STEP_VIEW_FIELDS = ("status", "outputs", "history", "iteration")

RUN_FIELDS = ("step_runs", "llm_calls", "tokens", "elapsed_s", "max_step_runs")
"""The ``run`` counters; ``build_activation`` fills any the caller leaves out with 0."""

CEL_TYPE_NAMES = frozenset(
    {"bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type"}
)
"""Type names CEL lets an expression mention (``type(x) == string``)."""

CEL_RESERVED_WORDS = frozenset(
    {
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    }
)
"""Words the CEL specification reserves: an identifier (a step id) may not be one."""


class CelSyntaxError(ValueError):
    """An expression that does not compile; ``column`` is 1-based within the expression."""

    def __init__(self, message: str, *, expr: str, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.expr = expr
        self.column = column

    def __str__(self) -> str:
        return f"{self.message} (column {self.column} of {self.expr!r})"


class CelEvaluationError(RuntimeError):
    """An expression that compiled but could not be evaluated against an activation."""

    def __init__(self, message: str, *, expr: str, steps: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.expr = expr
        self.steps = steps
        """Set when the evaluation stopped at the step limit: the steps it had taken."""

    def __str__(self) -> str:
        return self.message


# -- the one Environment ------------------------------------------------------

_ENVIRONMENT = celpy.Environment(runner_class=BoundedRunner)
"""The process-wide Environment, created on import: creating one sets the recursion
limit, so it happens once and at a predictable moment. Its programs evaluate within the
cost limit (engine/cel_budget.py)."""

_JOIN = NUMERIC_FUNCTIONS["_+_"]


def _join(*args: Any) -> Any:
    """``+`` under the numeric policy, what it builds held to the cost limit's lengths."""
    return check_length(_JOIN(*args))


def _matches(text: Any, pattern: Any) -> Any:
    """``matches()`` as cel-python's, except that a pattern RE2 cannot read is an evaluation error
    naming it: cel-python's compiles it with RE2's logging on, which writes its complaint
    straight to the process's stderr — over the app's screen, beside a command's one line."""
    if not isinstance(text, str) or not isinstance(pattern, str):
        return base_functions["matches"](text, pattern)
    try:
        compiled = re2.compile(pattern, options=_QUIET_RE2)
    except re2.error as error:
        reason = error.args[0] if error.args else b""
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return CELEvalError(f"matches(): {str(pattern)!r} is not a regular expression ({reason})")
    return celtypes.BoolType(compiled.search(text) is not None)


_QUIET_RE2 = re2.Options()
_QUIET_RE2.log_errors = False

_FUNCTIONS: dict[str, Callable[..., Any]] = {**NUMERIC_FUNCTIONS, "_+_": _join, "matches": _matches}


# -- compiled expressions ------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CompiledExpr:
    """A compiled CEL expression: evaluate it as often as needed."""

    text: str
    references: tuple[Reference, ...]
    calls: tuple[FunctionCall, ...]
    result: str | None
    """What it yields when its outermost operator says so (:func:`result_type`)."""

    @cached_property
    def _program(self) -> Any:
        """cel-python's program, built at the first evaluation: a workflow's expressions are
        compiled when it loads, and most are evaluated later or never (``validate``). Its
        parse tree is not kept meanwhile — thousands of trees held for nothing made every
        collection of the cycle collector slower — and is parsed again then (the text's
        shape is known: a few microseconds)."""
        return _ENVIRONMENT.program(_tree(self.text), functions=_FUNCTIONS)

    @property
    def identifiers(self) -> list[str]:
        """The dotted references it reads (``steps.a.outputs.x``), in textual order."""
        seen: list[str] = []
        for reference in self.references:
            dotted = str(reference)
            if dotted not in seen:
                seen.append(dotted)
        return seen

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """The value as plain Python; raises CelEvaluationError on any evaluation error —
        going past the cost limit included.

        ``activation`` is what ``build_activation`` returns (plain values are
        converted too, at a cost).
        """
        context = {
            name: value if isinstance(value, CEL_VALUE_TYPES) else to_cel(value)
            for name, value in activation.items()
        }
        try:
            result = self._program.evaluate(context)
        except CostLimitExceeded as error:
            raise CelEvaluationError(error.message, expr=self.text, steps=error.steps) from None
        except CELEvalError as error:
            raise CelEvaluationError(_clean_message(error), expr=self.text) from None
        except RecursionError:
            raise CelEvaluationError(
                "expression or value nests too deeply to evaluate", expr=self.text
            ) from None
        except Exception as error:  # cel-python lets some Python errors through
            raise CelEvaluationError(f"{type(error).__name__}: {error}", expr=self.text) from None
        if isinstance(result, CELEvalError):
            raise CelEvaluationError(_clean_message(result), expr=self.text)
        return from_cel(result)


def compile_expr(expr: str) -> CompiledExpr:
    """Compile ``expr`` once (cached by text); raises CelSyntaxError with its column."""
    if not isinstance(expr, str):
        raise CelSyntaxError(
            f"an expression must be a string, got {type(expr).__name__}", expr=str(expr)
        )
    return _compile_cached(expr)


@lru_cache(maxsize=65536)
def _compile_cached(expr: str) -> CompiledExpr:
    if not expr.strip():
        raise CelSyntaxError("empty expression", expr=expr)
    if len(expr) > MAX_EXPRESSION_LENGTH:
        raise CelSyntaxError(
            f"expression is {len(expr)} characters long; the limit is {MAX_EXPRESSION_LENGTH}",
            expr=expr,
        )
    try:
        parsed = cel_parser.parse(expr)
    except CELParseError as error:
        raise CelSyntaxError(
            f"CEL syntax error: {_describe_parse_error(error)}",
            expr=expr,
            column=int(getattr(error, "column", None) or 1),
        ) from None
    except RecursionError:
        raise CelSyntaxError("expression nests too deeply", expr=expr) from None
    except Exception as error:  # the lark lexer can fail in ways cel-python does not wrap
        raise CelSyntaxError(f"CEL syntax error: {error}".splitlines()[0], expr=expr) from None
    if depth_of(parsed) > MAX_TREE_DEPTH:
        raise CelSyntaxError("expression nests too deeply", expr=expr)
    try:
        for token in parsed.tokens:
            if token.type == "INT_LIT":
                double_literal(token.value)
    except (OverflowError, ValueError):
        raise CelSyntaxError("an integer literal is too large for a double", expr=expr) from None
    for token in parsed.tokens:
        problem = literal_problem(token) if token.type in TEXT_LITERALS else None
        if problem is not None:
            raise CelSyntaxError(
                f"{problem}; write the character itself or a valid escape",
                expr=expr,
                column=int(token.column or 1),
            )
    analysis = analysis_of(parsed)
    if analysis.misuse is not None:
        raise CelSyntaxError(
            analysis.misuse[0], expr=expr, column=analysis.misuse_column(parsed.tokens)
        )
    references, calls = analysis.read(parsed.tokens)
    return CompiledExpr(expr, references, calls, analysis.result)


def _tree(text: str) -> lark.Tree[Any]:
    """The tree of a text that compiled, its integer literals rewritten to doubles."""
    tree = cel_parser.parse(text).tree
    rewrite_integer_literals(tree)
    return tree


def _describe_parse_error(error: Exception) -> str:
    """What lark found where: cel-python keeps the lark exception as the context."""
    cause = error.__context__
    if isinstance(cause, lark.exceptions.UnexpectedToken):
        if cause.token.type == "$END":
            return "unexpected end of expression"
        return f"unexpected {str(cause.token)!r}"
    if isinstance(cause, lark.exceptions.UnexpectedCharacters):
        return f"unexpected character {cause.char!r}"
    return str(error.args[0]).splitlines()[0] if error.args else "syntax error"


_RULE_OPERATORS = {
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
    "relation_eq": "==",
    "relation_ne": "!=",
    "relation_in": "in",
    "addition_add": "+",
    "addition_sub": "-",
    "multiplication_mul": "*",
    "multiplication_div": "/",
    "multiplication_mod": "%",
}


def _clean_message(error: CELEvalError) -> str:
    """cel-python's messages carry reprs of its internals; keep what a person needs."""
    text = str(error.args[0]) if error.args else str(error)
    text = re.sub(
        r"Token\('RULE', '(\w+)'\)", lambda m: _RULE_OPERATORS.get(m.group(1), m.group(1)), text
    )
    text = re.sub(r"<class 'celpy\.celtypes\.(\w+)Type'>", lambda m: m.group(1).lower(), text)
    text = re.sub(r" \(in activation .*$", "", text, flags=re.S)
    return text


def evaluate_bool(compiled: CompiledExpr, activation: Mapping[str, Any]) -> tuple[bool, str | None]:
    """(matched, error): an error or a non-boolean result counts as not matched (ADR-004)."""
    try:
        value = compiled.evaluate(activation)
    except CelEvaluationError as error:
        return False, error.message
    if not isinstance(value, bool):
        return False, f"expected a boolean, got {type(value).__name__} {value!r}"
    return value, None


# -- the activation ------------------------------------------------------------


@dataclass(frozen=True)
class StepView:
    """What ``steps.<id>`` shows a condition: status, latest outputs, earlier outputs, iteration.

    ``history`` holds the outputs of earlier iterations (oldest first) when a
    loop has brought the step back; ``outputs`` is always the latest. The CEL
    form is built once per view and cached, so a runner that keeps views of
    settled steps pays the conversion once.
    """

    status: str = "PENDING"
    outputs: Mapping[str, Any] = field(default_factory=dict)
    history: Sequence[Mapping[str, Any]] = ()
    iteration: int = 0

    @cached_property
    def cel(self) -> Any:
        status = self.status.value if isinstance(self.status, enum.Enum) else str(self.status)
        if status == "PENDING" and not (self.outputs or self.history or self.iteration):
            return _UNRUN_VIEW  # a workflow's many steps that have not run share one value
        return celtypes.MapType(
            {
                celtypes.StringType("status"): celtypes.StringType(status),
                celtypes.StringType("outputs"): to_cel(dict(self.outputs)),
                celtypes.StringType("history"): to_cel([dict(h) for h in self.history]),
                celtypes.StringType("iteration"): celtypes.DoubleType(float(self.iteration)),
            }
        )


_UNRUN_VIEW = celtypes.MapType(
    {
        celtypes.StringType("status"): celtypes.StringType("PENDING"),
        celtypes.StringType("outputs"): celtypes.MapType({}),
        celtypes.StringType("history"): celtypes.ListType([]),
        celtypes.StringType("iteration"): celtypes.DoubleType(0.0),
    }
)
"""``steps.<id>`` of a step that has not run (no evaluation changes a value it reads)."""


class StepsMap:
    """``steps`` as every activation of one run reads it, kept current one step at a time.

    Rebuilding the map from every step's view for each evaluation cost time in proportion
    to the workflow's size — quadratic over a run. A run keeps one map instead and replaces
    the entry of a step whose record changed (:meth:`put`), so an activation costs the
    same at 10 steps and at 10,000.
    """

    def __init__(self, views: Mapping[str, StepView]) -> None:
        self._keys = {step_id: celtypes.StringType(step_id) for step_id in views}
        self.cel = celtypes.MapType({self._keys[s]: view.cel for s, view in views.items()})

    def put(self, step_id: str, view: StepView) -> None:
        self.cel[self._keys[step_id]] = view.cel


def build_activation(
    *,
    inputs: Mapping[str, Any],
    steps: Mapping[str, StepView] | StepsMap,
    outputs: Mapping[str, Any] | None = None,
    iteration: int = 0,
    run: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The activation conditions evaluate against (DESIGN §4).

    ``inputs``: the run's inputs (plain, or already converted by :func:`to_cel`);
    ``steps``: a view per step id (pass every step the expression may read — a step that
    has not run is a PENDING view with empty outputs), or a run's :class:`StepsMap`;
    ``outputs``: the deciding step's own outputs; ``iteration``: how many times a loop has
    brought the deciding step back; ``run``: counters (RUN_FIELDS; missing ones are 0).
    """
    counters = {name: 0 for name in RUN_FIELDS}
    counters.update(run or {})
    return {
        "inputs": to_cel(inputs),
        "steps": steps.cel
        if isinstance(steps, StepsMap)
        else celtypes.MapType({celtypes.StringType(k): _view_cel(v) for k, v in steps.items()}),
        "outputs": to_cel(outputs or {}),
        "iteration": celtypes.DoubleType(float(iteration)),
        "run": to_cel(counters),
    }


def _view_cel(view: StepView | Mapping[str, Any]) -> Any:
    if isinstance(view, StepView):
        return view.cel
    return to_cel(view)


def unknown_functions(compiled: CompiledExpr) -> list[FunctionCall]:
    """Calls to functions that do not exist (checked at load time)."""
    return [call for call in compiled.calls if call.name not in KNOWN_FUNCTIONS]


def result_type(compiled: CompiledExpr) -> str | None:
    """What the expression yields, when its outermost operator says so without evaluating
    it (engine/cel_analysis.py); None when it depends on values."""
    return compiled.result
