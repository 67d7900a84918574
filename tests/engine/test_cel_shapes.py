"""Texts of one shape share their parse (engine/cel_parser.py) and their analysis
(engine/cel_analysis.py): every text compiles exactly as a parse of its own would — the same
tree, the same references, calls and result type, the same value or error when evaluated, the
same refusal of a misused macro.

The texts are drawn from shapes a workflow repeats, with names and literals drawn so that
what the analysis decides on (a bound variable, a method, a quoted index, a keyword read as
a literal, a sign the lexer could join to a number) varies within a shape."""

from __future__ import annotations

from typing import Any

import lark
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import cel_parser, conditions
from engine.cel_analysis import collect, macro_misuse, result_type
from engine.cel_values import rewrite_integer_literals
from engine.conditions import (
    CelEvaluationError,
    CelSyntaxError,
    CompiledExpr,
    build_activation,
    compile_expr,
)

SHAPES = [
    "steps.{a}.status == {s}",
    "steps.{a}.outputs.{b} >= {n}",
    "has(steps.{a}.outputs.{b}) && steps.{a}.outputs.{b} < {n}",
    "size(inputs.{b}) > {n} ? {s} : {s}",
    "inputs.{b}.exists({v}, {v} == {n})",
    "inputs.{b}.{m}({v}, {w} > {n})",
    "[{n}, {n}].map({v}, {v} + {n})[0] == {n}",
    "steps[{s}].outputs[{s}] == {s}",
    "{a} - {n} == {n}",
    "{a}-{n} == {n}",
    "{a} + {b} * {n} / {n} % {n}",
    "!{a} || {b} && {a}",
    "{t} || {t} && !{t}",
]
NAMES = st.sampled_from(["x", "y", "steps", "inputs", "draft", "true", "false", "null", "s1"])
METHODS = st.sampled_from(["all", "exists", "map", "filter", "startsWith", "frob"])
NUMBERS = st.sampled_from(["0", "1", "2", "10", "0x1F", "2.5", "7u", "-3"])
STRINGS = st.sampled_from(["'a'", "'draft'", '"x y"', "r'raw'", "'''q'''", "b'x'"])
TRUTHS = st.sampled_from(["true", "false"])


@st.composite
def texts(draw: Any) -> str:
    shape = draw(st.sampled_from(SHAPES))
    return shape.format(
        a=draw(NAMES),
        b=draw(NAMES),
        v=draw(NAMES),
        w=draw(NAMES),
        m=draw(METHODS),
        n=draw(NUMBERS),
        s=draw(STRINGS),
        t=draw(TRUTHS),
    )


ACTIVATION = build_activation(
    inputs={"x": [1, 2, 3], "y": "yes", "draft": {"x": 1}, "s1": [], "steps": 2},
    steps={},
)


def _own(text: str) -> lark.Tree[Any] | None:
    """The text parsed by the parser itself, no shape involved (None: it does not parse)."""
    try:
        return cel_parser.PARSER.parse(text)
    except lark.exceptions.LarkError:
        return None


def _value(evaluate: Any) -> Any:
    try:
        return ("value", evaluate(ACTIVATION))
    except CelEvaluationError as error:
        return ("error", error.message)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(texts(), min_size=2, max_size=6))
def test_texts_of_one_shape_compile_as_their_own_parse_would(batch: list[str]) -> None:
    for text in batch:
        own = _own(text)
        try:
            compiled = compile_expr(text)
        except CelSyntaxError:
            assert own is None or macro_misuse(own) is not None, text
            continue
        assert own is not None, text
        assert macro_misuse(own) is None, text
        assert cel_parser.parse(text).tree == own, text
        references, calls = collect(own)
        assert (list(compiled.references), list(compiled.calls)) == (references, calls), text
        assert compiled.result == result_type(own), text
        assert _value(compiled.evaluate) == _value(_compiled_from(text, own).evaluate), text


def _compiled_from(text: str, tree: lark.Tree[Any]) -> CompiledExpr:
    """``text`` compiled from ``tree`` (the parser's own), as conditions builds its program."""
    rewrite_integer_literals(tree)
    compiled = CompiledExpr(text, (), (), None)
    compiled.__dict__["_program"] = conditions._ENVIRONMENT.program(
        tree, functions=conditions._FUNCTIONS
    )
    return compiled


def test_a_bound_variable_is_no_reference_in_one_text_and_a_reference_in_the_next() -> None:
    bound = compile_expr("inputs.x.all(x, x > 1)")
    free = compile_expr("inputs.x.all(y, x > 1)")
    assert [str(r) for r in bound.references] == ["inputs.x"]
    assert [str(r) for r in free.references] == ["inputs.x", "x"]
    called = compile_expr("inputs.x.frob(x, x > 1)")  # not a macro: its first argument is read
    assert [str(r) for r in called.references] == ["inputs.x", "x", "x"]


def test_literals_the_lexer_makes_of_names_keep_their_places() -> None:
    """``true`` and ``false`` are lexed as names and made booleans: found by the differential
    suite, a shape filled every boolean of a text with its last one when the boolean tokens
    had no place in the text (cel-python's own callback drops it)."""
    assert compile_expr("false || false").evaluate({}) is False
    assert compile_expr("true || false").evaluate({}) is True
    assert compile_expr("false || true").evaluate({}) is True
    assert cel_parser.parse("true || false").shape is cel_parser.parse("false || false").shape


def test_a_sign_the_lexer_joins_to_a_number_parses_as_the_parser_reads_it() -> None:
    """``x-1``: the parser, which looks at where it is, reads a minus; a text whose tokens
    it reads otherwise than the lexer keeps no shape, and is parsed every time."""
    assert compile_expr("inputs.steps-1 == 1").evaluate(ACTIVATION) is True
    assert compile_expr("inputs.steps - 1 == 1").evaluate(ACTIVATION) is True
    assert cel_parser.parse("inputs.steps-1 == 1").shape is None


def test_a_filled_tree_reports_positions_as_a_parsed_one() -> None:
    first = cel_parser.parse("steps.a.outputs.b + 1")
    second = cel_parser.parse("steps.c.outputs.dd + 1")
    assert first.shape is not None and first.shape is second.shape
    own = cel_parser.PARSER.parse("steps.c.outputs.dd + 1")
    for filled, parsed in zip(second.tree.iter_subtrees(), own.iter_subtrees()):
        assert (filled.meta.line, filled.meta.column, filled.meta.end_column) == (
            parsed.meta.line,
            parsed.meta.column,
            parsed.meta.end_column,
        )
