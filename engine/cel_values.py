"""CEL values: plain Python in and out, and the one numeric policy (DESIGN §4).

Part of the CEL layer (engine/conditions.py is its API). cel-python has no overload for
``1 == 1.0`` or for ``x < 2.5`` with an integer ``x``; it raises. So every number is a
double: numbers going in are converted to doubles, integer literals are rewritten to
double literals at compile time, and the functions that return integers (``size()``,
``int()``, the timestamp getters) are wrapped to return doubles. ``%`` works on doubles
and list indexes accept whole doubles. On the way out, whole numbers come back as ``int``
and the others as ``float`` (JSON's one number type, so ``inputs.max_rounds`` hands a step
``4``, not ``4.0``). The price: ``7 / 2`` is ``3.5`` and integers beyond 2**53 lose
precision.
"""

from __future__ import annotations

import datetime as _dt
import enum
import math
from collections.abc import Callable, Mapping
from typing import Any

import lark
from celpy import celtypes
from celpy.evaluation import base_functions, celbytes, celstr

MAX_EXACT_INTEGER = 2**53

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
        if abs(number) <= MAX_EXACT_INTEGER:
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

NUMERIC_FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: _on_doubles(base_functions[name]) for name in _INTEGER_FUNCTIONS},
    **{name: _on_doubles(base_functions[name]) for name in _NUMERIC_OPERATORS},
    "_%_": _on_doubles(_double_mod),
    "_[_]": _on_doubles(_index),
    "string": _on_doubles(_string),
}


# -- the numeric policy: literals ----------------------------------------------


def double_literal(text: str) -> str:
    """An integer literal's text as the text of the equal double literal; OverflowError or
    ValueError when there is none."""
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    number = float(int(digits, 16) if digits.lower().startswith("0x") else int(digits))
    if math.isinf(number):
        raise OverflowError(text)
    return repr(-number if negative else number)


TEXT_LITERALS = frozenset({"STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"})


def literal_problem(token: lark.Token) -> str | None:
    """Why a string or bytes literal's escapes make no value, or None when they do.

    cel-python expands escapes only when it evaluates, so ``'\\uD800'`` (half of a UTF-16 pair,
    which no stored text can hold), ``'\\U00110000'`` (past the last character) or
    ``b'\\u0100'`` (past a byte) would compile and fail — or be stored — later; the loader
    refuses them with the rest of the expression's mistakes.
    """
    try:
        value = celbytes(token) if token.type == "BYTES_LIT" else celstr(token)
    except (ValueError, OverflowError):
        return f"{token.value} holds an escape that is no {_unit(token)}"
    if isinstance(value, str) and any("\ud800" <= char <= "\udfff" for char in value):
        return f"{token.value} holds an escape of half a UTF-16 pair (\\uD800-\\uDFFF)"
    return None


def _unit(token: lark.Token) -> str:
    return "byte" if token.type == "BYTES_LIT" else "character"


def rewrite_integer_literals(tree: lark.Tree[Any]) -> None:
    """Turn every INT_LIT into the equal FLOAT_LIT, in place."""
    for node in tree.iter_subtrees():
        if node.data != "literal" or not node.children:
            continue
        token = node.children[0]
        if isinstance(token, lark.Token) and token.type == "INT_LIT":
            node.children[0] = token.update("FLOAT_LIT", double_literal(token.value))


# -- values in and out ---------------------------------------------------------

CEL_VALUE_TYPES = (
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
    if isinstance(value, CEL_VALUE_TYPES):
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
        if number.is_integer() and abs(number) <= MAX_EXACT_INTEGER:
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
