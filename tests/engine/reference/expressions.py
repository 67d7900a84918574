"""A tiny evaluator for the CEL subset the generated workflows use — the reference's own.

It shares nothing with engine/conditions.py (which wraps cel-python): a second
reading of DESIGN §4 for the expressions the generator writes. Grammar:
literals (ints, floats, 'strings', true, false, lists ``[a, b]``), dotted names
(``iteration``, ``inputs.n``, ``outputs.f``, ``steps.s.outputs.f``, ``steps.s.status``),
``has(path)``, ``size(x)``, ``string(x)``, ``x[i]``, ``l.map(v, e)``, unary ``!``/``-``,
``* / %``, ``+ -``, comparisons, ``&&``, ``||`` and ``c ? a : b``.

Numbers behave as a person reads them: ``1 == 1.0``, ``(1 + 2) % 2 == 1``,
``string(3) == '3'``. A missing key raises :class:`Missing`; ``has()`` tests it.

An evaluation is bounded (DESIGN §4, issue 27): past :data:`MAX_BODY_EVALUATIONS`
evaluations of ``map`` bodies it stops with an evaluation error, like any other — the
engines count their own way (cel-python's tree nodes) and stop at their own bound; what
both say is that an expression far past it is an error, not a value.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Mapping, MutableMapping
from typing import Any

MAX_BODY_EVALUATIONS = 100_000

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+\.\d+|\d+)|(?P<str>'[^']*')|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!?:().\[\],]))"
)


class Missing(Exception):
    """A name or key the activation does not have (an evaluation error)."""


def tokens(text: str) -> list[str]:
    found: list[str] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip() == "":
                break
            raise SyntaxError(f"cannot read {text[position:]!r}")
        found.append(match.group().strip())
        position = match.end()
    return found


_BINARY = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 3,
    "<=": 3,
    ">": 3,
    ">=": 3,
    "+": 4,
    "-": 4,
    "*": 5,
    "/": 5,
    "%": 5,
}


class _Parser:
    def __init__(self, text: str, scope: Mapping[str, Any]) -> None:
        self.items = tokens(text)
        self.at = 0
        self.scope: Mapping[str, Any] = scope
        self.spent = [0]
        """Evaluations of ``map`` bodies so far (one evaluation of the text)."""

    def peek(self) -> str | None:
        return self.items[self.at] if self.at < len(self.items) else None

    def take(self, expected: str | None = None) -> str:
        item = self.items[self.at]
        if expected is not None and item != expected:
            raise SyntaxError(f"expected {expected!r}, got {item!r}")
        self.at += 1
        return item

    # Every sub-expression is parsed into a thunk, so ``&&``, ``||`` and ``?:`` short-circuit.
    def expression(self) -> Any:
        condition = self.binary(1)
        if self.peek() != "?":
            return condition
        self.take("?")
        then = self.expression()
        self.take(":")
        otherwise = self.expression()
        return lambda: then() if _truth(condition()) else otherwise()

    def binary(self, level: int) -> Any:
        left = self.unary()
        while (op := self.peek()) in _BINARY and _BINARY[op] >= level:
            self.take()
            right = self.binary(_BINARY[op] + 1)
            left = _combine(op, left, right)
        return left

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            inner = self.unary()
            return lambda: not _truth(inner())
        if self.peek() == "-":
            self.take()
            inner = self.unary()
            return lambda: -_number(inner())
        return self.postfix(self.primary())

    def postfix(self, value: Any) -> Any:
        while self.peek() in (".", "["):
            if self.take() == ".":
                key = self.take()
                if key == "map" and self.peek() == "(":
                    value = self.map(value)
                else:
                    value = _member(value, key)
            else:
                index = self.expression()
                self.take("]")
                value = _item(value, index)
        return value

    def map(self, source: Any) -> Any:
        """``source.map(v, body)``: the body parsed with ``v`` bound in a frame of its own,
        set to each item in turn."""
        self.take("(")
        variable = self.take()
        self.take(",")
        outer = self.scope
        frame: MutableMapping[str, Any] = ChainMap({}, outer)
        self.scope = frame
        body = self.expression()
        self.scope = outer
        self.take(")")
        spent = self.spent

        def mapped() -> list[Any]:
            items = source()
            if not isinstance(items, list):
                raise Missing(f"map over {items!r}")
            values = []
            for item in items:
                spent[0] += 1
                if spent[0] > MAX_BODY_EVALUATIONS:
                    raise Missing("past the evaluation bound")
                frame[variable] = item
                values.append(body())
            return values

        return mapped

    def primary(self) -> Any:
        item = self.take()
        if item == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if item == "[":
            elements = []
            while self.peek() != "]":
                elements.append(self.expression())
                if self.peek() == ",":
                    self.take(",")
            self.take("]")
            return lambda: [element() for element in elements]
        if item[0].isdigit():
            number = float(item) if "." in item else int(item)
            return lambda: number
        if item[0] == "'":
            return lambda: item[1:-1]
        if item in ("true", "false"):
            return lambda: item == "true"
        if item in ("has", "size", "string") and self.peek() == "(":
            self.take("(")
            argument = self.expression()
            self.take(")")
            return _function(item, argument)
        scope = self.scope
        return lambda: _lookup(scope, item)


def _lookup(scope: Mapping[str, Any], key: str) -> Any:
    if key not in scope:
        raise Missing(key)
    return scope[key]


def _member(value: Any, key: str) -> Any:
    def get() -> Any:
        container = value()
        if not isinstance(container, Mapping) or key not in container:
            raise Missing(key)
        return container[key]

    get.has = lambda: isinstance(value(), Mapping) and key in value()  # type: ignore[attr-defined]
    return get


def _item(value: Any, index: Any) -> Any:
    def get() -> Any:
        container, position = value(), index()
        if isinstance(container, list):
            number = _number(position)
            if number != int(number) or not 0 <= int(number) < len(container):
                raise Missing(f"index {position}")
            return container[int(number)]
        if isinstance(container, Mapping) and position in container:
            return container[position]
        raise Missing(f"index {position}")

    return get


def _function(name: str, argument: Any) -> Any:
    if name == "has":
        return lambda: argument.has()
    if name == "size":
        return lambda: len(argument())
    return lambda: _text(argument())


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value: Any) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Missing(f"not a number: {value!r}")
    return value


def _truth(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Missing(f"not a boolean: {value!r}")
    return value


def _combine(op: str, left: Any, right: Any) -> Any:
    if op == "&&":
        return lambda: _truth(left()) and _truth(right())
    if op == "||":
        return lambda: _truth(left()) or _truth(right())
    if op in ("==", "!="):
        return lambda: (left() == right()) == (op == "==")

    def arithmetic() -> Any:
        a, b = left(), right()
        if op == "+" and isinstance(a, str) and isinstance(b, str):
            return a + b
        a, b = _number(a), _number(b)
        if op in ("/", "%") and b == 0:
            raise Missing("division by zero")
        return {
            "<": lambda: a < b,
            "<=": lambda: a <= b,
            ">": lambda: a > b,
            ">=": lambda: a >= b,
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "/": lambda: a / b,
            "%": lambda: a % b,
        }[op]()

    return arithmetic


def evaluate(text: str, scope: Mapping[str, Any]) -> Any:
    """The value of ``text`` in ``scope``; raises Missing on an evaluation error."""
    parser = _Parser(text, scope)
    thunk = parser.expression()
    if parser.peek() is not None:
        raise SyntaxError(f"unexpected {parser.peek()!r} in {text!r}")
    return thunk()


def matches(text: str, scope: Mapping[str, Any]) -> bool:
    """A condition: an error or a non-boolean counts as not matched (ADR-004)."""
    try:
        value = evaluate(text, scope)
    except Missing:
        return False
    return value is True
