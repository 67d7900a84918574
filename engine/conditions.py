"""CEL conditions (DESIGN §4): the one module that talks to cel-python.

Every cel-python trap is handled here and nowhere else:

- **One numeric policy.** cel-python has no overload for ``1 == 1.0`` or for
  ``x < 2.5`` with an integer ``x``; it raises. So every number is a double:
  numbers in the activation are converted to doubles, integer literals are
  rewritten to double literals at compile time, and the functions that return
  integers (``size()``, ``int()``, the timestamp getters) are wrapped to return
  doubles. ``%`` works on doubles and list indexes accept whole doubles. On the
  way out, whole numbers come back as ``int`` and the others as ``float``
  (JSON's one number type, so ``inputs.max_rounds`` hands a step ``4``, not
  ``4.0``). The price: ``7 / 2`` is ``3.5`` and integers beyond 2**53 lose
  precision.
- **Wrapper types.** Activations are built from plain Python values here
  (``build_activation``), and results are converted back to plain Python
  (``bool``/``int``/``float``/``str``/``list``/``dict``/``None``).
- **Missing keys raise.** ``has(steps.x.outputs.field)`` is how a condition
  tests an optional output; an evaluation error is a ``CelEvaluationError``,
  and ``evaluate_bool`` turns it into "not matched" plus the message, which is
  what ADR-004 asks of routing (fall through, record the error).
- **The Environment changes the recursion limit** when created, so there is
  exactly one per process, created when this module is imported.
- **cel-python builds its parser on every start.** Building the LALR tables
  from its grammar takes about 0.2 s, most of what `workbench validate` took;
  lark can keep a built parser in a file and load it ten times faster, but
  cel-python does not ask it to. So this module builds cel-python's parser —
  its grammar, its options — with lark's cache on, and installs it where
  cel-python looks for its one parser (``CELParser.CEL_PARSER``).

Compilation is cached by expression text; one evaluation costs on the order of
a hundred microseconds, so callers compile at load time and evaluate only what
a decision needs. What an expression reads and calls is found in its parse tree by
engine/cel_references.py.
"""

from __future__ import annotations

import datetime as _dt
import enum
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import celpy
import lark
import lark.exceptions
from celpy import celtypes
from celpy.celparser import CELParseError, CELParser
from celpy.evaluation import CELEvalError, base_functions
from platformdirs import user_cache_dir

from engine.cel_references import FunctionCall, Reference, collect

MAX_EXPRESSION_LENGTH = 4000
"""Longer texts are refused at compile time: conditions are one-liners, and the
parser's cost grows with the text."""

MAX_TREE_DEPTH = 250
"""Deeper parse trees are refused at compile time: cel-python evaluates
recursively, and a tree this deep (about two dozen nested parentheses) is far
from the recursion limit, so an expression that compiles also evaluates."""

_MAX_EXACT_INTEGER = 2**53

TOP_LEVEL_NAMES = ("inputs", "steps", "outputs", "iteration", "run")
"""The names an activation defines; anything else a condition reads names nothing."""

STEP_VIEW_FIELDS = ("status", "outputs", "history", "iteration")

RUN_FIELDS = ("step_runs", "llm_calls", "tokens", "elapsed_s", "max_step_runs")
"""The ``run`` counters; ``build_activation`` fills any the caller leaves out with 0."""

CEL_TYPE_NAMES = frozenset(
    {"bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type"}
)
"""Type names CEL lets an expression mention (``type(x) == string``)."""

MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})

KNOWN_FUNCTIONS = (
    frozenset(
        name for name in base_functions if not name.startswith("_") and not name.endswith("_")
    )
    | MACROS
)
"""Function and method names an expression may call."""

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

    def __init__(self, message: str, *, expr: str) -> None:
        super().__init__(message)
        self.message = message
        self.expr = expr

    def __str__(self) -> str:
        return self.message


# -- the one Environment ------------------------------------------------------

PARSER_CACHE = Path(user_cache_dir("cel-python", appauthor=False)) / "cel-parser.lark"
"""cel-python's parser, as lark saves it; lark checks the file against the grammar, the
options and its own version, and rebuilds a stale, unreadable or missing one."""


class _RuleTree(lark.Tree[Any]):
    """A parse tree naming its rule with a ``Token("RULE", name)``, as the trees of a parser lark
    builds from the grammar do. A parser loaded from lark's cache names rules with plain strings,
    and cel-python's evaluation errors quote that name (:func:`_clean_message` reads it)."""

    def __init__(self, data: str, children: list[Any], meta: Any = None) -> None:
        rule = data if isinstance(data, lark.Token) else lark.Token("RULE", data)
        super().__init__(rule, children, meta)


def _install_cached_parser() -> None:
    """cel-python's parser, built as cel-python builds it (celpy/celparser.py) but through
    lark's cache (see the module docstring)."""
    if CELParser.CEL_PARSER is not None:
        return
    try:
        PARSER_CACHE.parent.mkdir(parents=True, exist_ok=True)
        cache: str | bool = str(PARSER_CACHE)
    except OSError:  # no writable cache dir: build it every time, as cel-python would
        cache = False
    CELParser.CEL_PARSER = lark.Lark(
        (Path(celpy.__file__).parent / "cel.lark").read_text(encoding="utf-8"),
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        tree_class=_RuleTree,
        cache=cache,
    )


_install_cached_parser()
_ENVIRONMENT = celpy.Environment()
"""The process-wide Environment, created on import: creating one sets the recursion
limit, so it happens once and at a predictable moment."""


def _environment() -> celpy.Environment:
    return _ENVIRONMENT


# -- the numeric policy: functions ---------------------------------------------


def _as_double(value: Any) -> Any:
    """Any number cel-python hands back (its int types, or a plain Python number from its
    arithmetic) as a CEL double; every other value as it is."""
    if isinstance(value, (bool, celtypes.BoolType, celtypes.DoubleType)):
        return value
    if isinstance(value, (int, float)):
        return celtypes.DoubleType(float(value))
    return value


def _on_doubles(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with its arguments and its result held to the numeric policy, so an
    arithmetic result (``size(xs) - 1``, ``iteration + 1``) is a double like any other."""

    def wrapped(*args: Any) -> Any:
        return _as_double(function(*(_as_double(arg) for arg in args)))

    return wrapped


def _double_mod(left: Any, right: Any) -> Any:
    if isinstance(left, celtypes.DoubleType) and isinstance(right, celtypes.DoubleType):
        if float(right) == 0.0:
            raise ZeroDivisionError("modulus by zero")
        return celtypes.DoubleType(math.fmod(float(left), float(right)))
    return base_functions["_%_"](left, right)


def _index(container: Any, index: Any) -> Any:
    if isinstance(container, celtypes.ListType) and isinstance(index, celtypes.DoubleType):
        number = float(index)
        if not number.is_integer():
            raise IndexError(f"list index {number} is not a whole number")
        return container[int(number)]
    return base_functions["_[_]"](container, index)


def _string(value: Any) -> Any:
    """``string()``: a whole double reads as the integer it is (``string(3)`` is "3"), a
    boolean as CEL writes it (``true``)."""
    if isinstance(value, celtypes.BoolType):
        return celtypes.StringType("true" if value else "false")
    if isinstance(value, celtypes.DoubleType) and float(value).is_integer():
        number = float(value)
        if abs(number) <= _MAX_EXACT_INTEGER:
            return celtypes.StringType(str(int(number)))
    return base_functions["string"](value)


_INTEGER_FUNCTIONS = (
    "size",
    "int",
    "uint",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getMonth",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getSeconds",
)

_NUMERIC_OPERATORS = (
    "-_",
    "_+_",
    "_-_",
    "_*_",
    "_/_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "_==_",
    "_!=_",
)

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: _on_doubles(base_functions[name]) for name in _INTEGER_FUNCTIONS},
    **{name: _on_doubles(base_functions[name]) for name in _NUMERIC_OPERATORS},
    "_%_": _on_doubles(_double_mod),
    "_[_]": _on_doubles(_index),
    "string": _on_doubles(_string),
}


# -- the numeric policy: literals ----------------------------------------------


def _rewrite_integer_literals(tree: lark.Tree[Any]) -> None:
    """Turn every INT_LIT into the equal FLOAT_LIT, in place."""
    for node in tree.iter_subtrees():
        if node.data != "literal" or not node.children:
            continue
        token = node.children[0]
        if isinstance(token, lark.Token) and token.type == "INT_LIT":
            text = token.value
            negative = text.startswith("-")
            digits = text[1:] if negative else text
            number = float(int(digits, 16) if digits.lower().startswith("0x") else int(digits))
            if math.isinf(number):
                raise OverflowError(text)
            node.children[0] = token.update("FLOAT_LIT", repr(-number if negative else number))


# -- compiled expressions ------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CompiledExpr:
    """A compiled CEL expression: evaluate it as often as needed."""

    text: str
    references: tuple[Reference, ...]
    calls: tuple[FunctionCall, ...]
    _program: Any = field(repr=False)

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
        """The value as plain Python; raises CelEvaluationError on any evaluation error.

        ``activation`` is what ``build_activation`` returns (plain values are
        converted too, at a cost).
        """
        context = {
            name: value if isinstance(value, _CEL_VALUE_TYPES) else to_cel(value)
            for name, value in activation.items()
        }
        try:
            result = self._program.evaluate(context)
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


@lru_cache(maxsize=4096)
def _compile_cached(expr: str) -> CompiledExpr:
    if not expr.strip():
        raise CelSyntaxError("empty expression", expr=expr)
    if len(expr) > MAX_EXPRESSION_LENGTH:
        raise CelSyntaxError(
            f"expression is {len(expr)} characters long; the limit is {MAX_EXPRESSION_LENGTH}",
            expr=expr,
        )
    environment = _environment()
    try:
        tree = environment.compile(expr)
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
    if _tree_depth(tree) > MAX_TREE_DEPTH:
        raise CelSyntaxError("expression nests too deeply", expr=expr)
    try:
        _rewrite_integer_literals(tree)
    except (OverflowError, ValueError):
        raise CelSyntaxError("an integer literal is too large for a double", expr=expr) from None
    references, calls = collect(tree)
    program = environment.program(tree, functions=_FUNCTIONS)
    return CompiledExpr(expr, tuple(references), tuple(calls), program)


def _tree_depth(tree: lark.Tree[Any]) -> int:
    deepest = 0
    stack: list[tuple[lark.Tree[Any], int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, lark.Tree))
    return deepest


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


# -- values in and out ---------------------------------------------------------

_CEL_VALUE_TYPES = (
    celtypes.BoolType,
    celtypes.IntType,
    celtypes.UintType,
    celtypes.DoubleType,
    celtypes.StringType,
    celtypes.BytesType,
    celtypes.ListType,
    celtypes.MapType,
    celtypes.NullType,
    celtypes.TimestampType,
    celtypes.DurationType,
)


def to_cel(value: Any, _depth: int = 0) -> Any:
    """A plain Python value as a CEL value, every number a double."""
    if _depth > 100:
        raise ValueError("value nests more than 100 levels deep")
    if value is None:
        return celtypes.NullType()
    if isinstance(value, _CEL_VALUE_TYPES):
        return value
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, enum.Enum):
        return to_cel(value.value, _depth + 1)
    if isinstance(value, (int, float)):
        return celtypes.DoubleType(float(value))
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, bytes):
        return celtypes.BytesType(value)
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=_dt.UTC)
        return celtypes.TimestampType(aware)
    if isinstance(value, _dt.date):
        return celtypes.StringType(value.isoformat())
    if isinstance(value, Mapping):
        return celtypes.MapType(
            {celtypes.StringType(str(k)): to_cel(v, _depth + 1) for k, v in value.items()}
        )
    if isinstance(value, (list, tuple, set, frozenset)):
        return celtypes.ListType([to_cel(v, _depth + 1) for v in value])
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return to_cel(dump(mode="json"), _depth + 1)
    return celtypes.StringType(str(value))


_TYPE_NAMES: dict[Any, str] = {
    value: name for name, value in base_functions.items() if isinstance(value, type)
}
"""cel-python's class for each type CEL names (``double``, ``string``, ``null_type``, ...)."""


def from_cel(value: Any) -> Any:
    """A CEL value as plain Python (whole numbers as int, see the module docstring)."""
    if value is None or isinstance(value, celtypes.NullType):
        return None
    if isinstance(value, celtypes.BoolType) or isinstance(value, bool):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, (celtypes.DoubleType, float)):
        number = float(value)
        if number.is_integer() and abs(number) <= _MAX_EXACT_INTEGER:
            return int(number)
        return number
    if isinstance(value, celtypes.StringType) or isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):  # a BytesType, or the plain bytes cel-python's + returns
        return bytes(value)
    if isinstance(value, celtypes.MapType) or isinstance(value, dict):
        return {from_cel(k): from_cel(v) for k, v in value.items()}
    if isinstance(value, (celtypes.ListType, list, tuple)):
        return [from_cel(v) for v in value]
    if isinstance(value, celtypes.TimestampType):
        return _dt.datetime.fromtimestamp(value.timestamp(), tz=_dt.UTC)
    if isinstance(value, celtypes.DurationType):
        return float(value.total_seconds())
    # what is left is a type, the value of CEL's type(): its name as an expression writes it
    return _TYPE_NAMES.get(value, str(value))


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
        return celtypes.MapType(
            {
                celtypes.StringType("status"): celtypes.StringType(status),
                celtypes.StringType("outputs"): to_cel(dict(self.outputs)),
                celtypes.StringType("history"): to_cel([dict(h) for h in self.history]),
                celtypes.StringType("iteration"): celtypes.DoubleType(float(self.iteration)),
            }
        )


def build_activation(
    *,
    inputs: Mapping[str, Any],
    steps: Mapping[str, StepView],
    outputs: Mapping[str, Any] | None = None,
    iteration: int = 0,
    run: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The activation conditions evaluate against (DESIGN §4).

    ``inputs``: the run's inputs; ``steps``: a view per step id (pass every
    step the expression may read — a step that has not run is a PENDING view
    with empty outputs); ``outputs``: the deciding step's own outputs;
    ``iteration``: how many times a loop has brought the deciding step back;
    ``run``: counters (RUN_FIELDS; missing ones are 0).
    """
    counters = {name: 0 for name in RUN_FIELDS}
    counters.update(run or {})
    return {
        "inputs": to_cel(dict(inputs)),
        "steps": celtypes.MapType({celtypes.StringType(k): _view_cel(v) for k, v in steps.items()}),
        "outputs": to_cel(dict(outputs or {})),
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


def result_type(compiled: CompiledExpr) -> str | None:
    """What the expression yields, when its outermost operator says so without evaluating
    it: "bool", "number", "string", "bytes", "list", "map" or "null"; None when it depends
    on values (a field, an index, a ternary). The loader refuses a ``when`` that can never
    be a boolean this way."""
    node: Any = compiled._program.ast
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
