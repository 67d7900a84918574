"""CEL conditions: the cel-python traps, handled in engine/conditions.py and nowhere else."""

from __future__ import annotations

import datetime as dt
import enum
import sys
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from engine.conditions import (
    CelEvaluationError,
    CelSyntaxError,
    StepsMap,
    StepView,
    build_activation,
    compile_expr,
    evaluate_bool,
    from_cel,
    result_type,
    to_cel,
    unknown_functions,
)
from engine.states import StepStatus


def activation(outputs: dict | None = None, **kwargs):
    return build_activation(
        inputs=kwargs.pop("inputs", {"max_rounds": 4, "topics": ["a", "b"], "query": "q"}),
        steps=kwargs.pop(
            "steps",
            {
                "draft": StepView(
                    status=StepStatus.SUCCEEDED,
                    outputs={"confidence": 1, "status": "OK", "claims": [{"verified": True}]},
                    history=[{"confidence": 0.5}],
                    iteration=1,
                ),
            },
        ),
        outputs=outputs,
        **kwargs,
    )


# -- the numeric policy: int vs double, both ways ------------------------------------


@pytest.mark.parametrize(
    "confidence, expected", [(1, False), (0.65, True), (0, True), (0.7, False)]
)
def test_confidence_below_threshold_holds_for_int_and_double_outputs(confidence, expected):
    assert (
        compile_expr("outputs.confidence < 0.7").evaluate(activation({"confidence": confidence}))
        is expected
    )


@pytest.mark.parametrize(
    "expr",
    [
        "1 == 1.0",
        "1.0 == 1",
        "2 > 1.5",
        "outputs.n < 2.5",
        "outputs.x == 3",
        "outputs.x == 3.0",
        "iteration >= 2",
        "iteration == 2.0",
        "-1 < 0.5",
        "0x10 == 16.0",
        "outputs.n % 2 == 0",
        "steps.draft.outputs.confidence == 1.0",
        "steps.draft.iteration == 1",
        "int(2.7) == 2",
    ],
)
def test_mixed_int_and_double_comparisons_hold(expr):
    assert compile_expr(expr).evaluate(activation({"n": 2, "x": 3.0}, iteration=2)) is True


@pytest.mark.parametrize(
    "expr",
    [
        "size(inputs.topics) >= 2",
        "inputs.topics.size() == 2",
        "size(inputs.query) == 1",
        "size(steps.draft.history) >= 1",
        "size(outputs) == 1.0",
        "inputs.topics[0] == 'a'",
        "inputs.topics[1.0] == 'b'",
    ],
)
def test_size_and_indexing_follow_the_numeric_policy(expr):
    assert compile_expr(expr).evaluate(activation({"k": 1})) is True


@given(
    value=st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False)),
    threshold=st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False)),
)
@settings(max_examples=60)
def test_comparisons_agree_with_python_for_any_int_or_float(value, threshold):
    literal = repr(float(threshold)) if isinstance(threshold, float) else str(threshold)
    compiled = compile_expr(f"outputs.v < {literal}")
    assert compiled.evaluate(activation({"v": value})) is (value < threshold)


# -- results are plain Python ------------------------------------------------------------


def test_results_are_plain_python_values_not_wrappers():
    result = compile_expr("[1, 2.5, 'x', true, null, {'k': [3]}]").evaluate(activation())
    assert result == [1, 2.5, "x", True, None, {"k": [3]}]
    assert [type(v) for v in result] == [int, float, str, bool, type(None), dict]
    assert type(compile_expr("1 == 1").evaluate(activation())) is bool
    assert compile_expr("inputs.max_rounds").evaluate(activation()) == 4
    assert type(compile_expr("inputs.max_rounds").evaluate(activation())) is int
    assert compile_expr("7 / 2").evaluate(activation()) == 3.5


def test_activation_conversions_round_trip_plain_values():
    day = dt.date(2024, 5, 1)
    stamp = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
    assert from_cel(to_cel({"a": [1, 2.5, None, True], "d": day, "s": StepStatus.FAILED})) == {
        "a": [1, 2.5, None, True],
        "d": "2024-05-01",
        "s": "FAILED",
    }
    assert from_cel(to_cel(stamp)) == stamp
    assert (
        compile_expr("inputs.day < '2025-01-01'").evaluate(activation(inputs={"day": day})) is True
    )


def test_step_views_expose_status_outputs_history_and_iteration():
    act = activation()
    assert compile_expr("steps.draft.status == 'SUCCEEDED'").evaluate(act) is True
    assert compile_expr("steps.draft.history[0].confidence").evaluate(act) == 0.5
    assert compile_expr("steps.draft.outputs.claims.all(c, c.verified)").evaluate(act) is True
    assert compile_expr("run.step_runs == 0 && run.llm_calls == 0").evaluate(act) is True


# -- missing keys, has(), evaluation errors --------------------------------------------------


def test_missing_keys_raise_and_has_tests_optional_outputs():
    act = activation({"present": 1})
    with pytest.raises(CelEvaluationError, match="no such member in mapping: 'absent'"):
        compile_expr("outputs.absent == 1").evaluate(act)
    assert compile_expr("has(outputs.absent)").evaluate(act) is False
    assert compile_expr("has(outputs.present) && outputs.present == 1").evaluate(act) is True
    assert compile_expr("!has(outputs.absent) || outputs.absent > 1").evaluate(act) is True


@pytest.mark.parametrize(
    "expr, message",
    [
        ("outputs.absent == 1", "no such member in mapping: 'absent'"),
        ("outputs.n + 'x' == 'y'", "no matching overload for + applied to '(double, string)'"),
        ("outputs.n", "expected a boolean, got int 2"),
        ("outputs.n.field", "does not support field selection"),
        ("nothing > 1", "undeclared reference to 'nothing'"),
    ],
)
def test_evaluation_errors_fall_through_as_not_matched(expr, message):
    matched, error = evaluate_bool(compile_expr(expr), activation({"n": 2}))
    assert matched is False
    assert error is not None and message in error


def test_cel_error_semantics_let_a_true_side_win():
    assert evaluate_bool(compile_expr("true || outputs.absent"), activation({})) == (True, None)


# -- compile: syntax errors with columns, caching, identifiers ----------------------------------


@pytest.mark.parametrize(
    "expr, column, message",
    [
        ("outputs.x >", 11, "unexpected end of expression"),
        ("outputs.x $ 2", 11, "unexpected character '$'"),
        ("a b", 3, "unexpected 'b'"),
        ("steps..x", 7, "unexpected '.'"),
        ("", 1, "empty expression"),
        ("(" * 30 + "1" + ")" * 30, 1, "expression nests too deeply"),
        ("1" * 400 + " == 1", 1, "an integer literal is too large for a double"),
        ("x" * 4001, 1, "expression is 4001 characters long; the limit is 4000"),
    ],
)
def test_syntax_errors_carry_a_message_and_column(expr, column, message):
    with pytest.raises(CelSyntaxError) as caught:
        compile_expr(expr)
    assert message in caught.value.message
    assert caught.value.column == column


def test_compilation_is_cached_by_text():
    assert compile_expr("iteration >= 2") is compile_expr("iteration >= 2")


def test_identifiers_list_dotted_references_without_macro_variables():
    compiled = compile_expr(
        "steps.a.outputs.claims.exists(c, c.ok) && has(steps.b.outputs.x) && inputs.q.startsWith('x')"
        " && steps['c'].status == 'SUCCEEDED' && size(outputs.items) > iteration"
    )
    assert compiled.identifiers == [
        "steps.a.outputs.claims",
        "steps.b.outputs.x",
        "inputs.q",
        "steps.c.status",
        "outputs.items",
        "iteration",
    ]
    assert [
        call.name for call in unknown_functions(compile_expr("frobnicate(1) && size([]) == 0"))
    ] == ["frobnicate"]


def test_compiling_never_creates_another_environment(monkeypatch):
    """An Environment sets the recursion limit when created: compiling new expressions must
    reuse the module's one (a counting stand-in for the class would see any new one)."""
    import celpy

    created: list[object] = []
    real = celpy.Environment

    def counting(*args, **kwargs):
        created.append(object())
        return real(*args, **kwargs)

    monkeypatch.setattr(celpy, "Environment", counting)
    before = sys.getrecursionlimit()
    for index in range(5):
        compile_expr(f"outputs.fresh_{index} == {index} && iteration >= {index}")
    assert created == []
    assert sys.getrecursionlimit() == before


# -- the numeric policy holds for arithmetic results too ----------------------------------


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("inputs.topics[size(inputs.topics) - 1]", "b"),
        ("inputs.topics[iteration - 1]", "a"),
        ("(iteration + 1) % 2 == 0", True),
        ("(inputs.max_rounds * 3) % 5 == 2", True),
        ("string(inputs.max_rounds)", "4"),
        ("string(inputs.max_rounds + 1)", "5"),
        ("string(size(inputs.topics))", "2"),
        ("string(-inputs.max_rounds)", "-4"),
        ("string(0.5 + 1)", "1.5"),
        ("string(iteration == 1)", "true"),
        ("inputs.max_rounds / 8 == 0.5", True),
        ("-(iteration + 1) < -1.5", True),
        ("[10, 20, 30][inputs.max_rounds - 3]", 20),
        ("steps['draft'].outputs['status']", "OK"),
        ("{'a': 1}['a'] + 1 == 2", True),
    ],
)
def test_arithmetic_results_follow_the_numeric_policy(expr, expected):
    assert compile_expr(expr).evaluate(activation(iteration=1)) == expected


@given(st.integers(-1000, 1000), st.integers(1, 50))
@settings(max_examples=60, deadline=None)
def test_arithmetic_on_ints_agrees_with_python(value, modulus):
    result = compile_expr(f"string((inputs.v + 1) * 2 % {modulus})").evaluate(
        build_activation(inputs={"v": value}, steps={})
    )
    import math

    assert result == str(int(math.fmod((value + 1) * 2, modulus)))


# -- what the loader reads from a compiled expression -------------------------------------


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("a || b", "bool"),
        ("a && b", "bool"),
        ("a < 1", "bool"),
        ("a in [1]", "bool"),
        ("a + 1", None),  # + also joins text and lists
        ("a - 1", "number"),
        ("a * 2", "number"),
        ("a % 2", "number"),
        ("!a", "bool"),
        ("-a", "number"),
        ("a.startsWith('x')", "bool"),
        ("a.exists(x, x)", "bool"),
        ("a.size()", None),
        ("a.b", None),
        ("a['b']", None),
        ("a", None),
        ("has(a.b)", "bool"),
        ("size(a)", "number"),
        ("string(a)", "string"),
        ("frobnicate(a)", None),
        ("true", "bool"),
        ("null", "null"),
        ("'yes'", "string"),
        ("b'x'", "bytes"),
        ("3", "number"),
        ("3u", "number"),
        ("2.5", "number"),
        ("[1, 2]", "list"),
        ("[]", "list"),
        ("{'a': 1}", "map"),
        ("{}", "map"),
        ("(a < 1)", "bool"),
        ("((2))", "number"),
        ("a ? 1 : 'x'", None),
    ],
)
def test_the_result_type_the_loader_reads_from_the_outermost_operator(expr, expected):
    assert result_type(compile_expr(expr)) == expected


def test_references_and_calls_carry_their_columns_for_file_line_col_messages():
    compiled = compile_expr("size(steps.a.outputs.x) > 1 && steps['b'].status == 'OK'")
    assert [(str(r), r.column) for r in compiled.references] == [
        ("steps.a.outputs.x", 6),
        ("steps.b.status", 32),
    ]
    assert [(c.name, c.column) for c in compiled.calls] == [("size", 1)]
    methods = compile_expr("inputs.xs.all(x, x > steps.c.outputs.n) && inputs.q.matches('a')")
    assert methods.identifiers == ["inputs.xs", "steps.c.outputs.n", "inputs.q"]
    assert [(c.name, c.column) for c in methods.calls] == [("all", 1), ("matches", 44)]


@pytest.mark.parametrize(
    "expr, identifiers",
    [
        ("steps[inputs.k].status == 'OK'", ["steps", "inputs.k"]),
        ("steps['a' + 'b'].status == 'OK'", ["steps"]),
        ("steps[r'a'].status == 'OK'", ["steps"]),
        ("inputs.xs[n] == 1", ["inputs.xs", "n"]),
        ("steps[''].status == 'OK'", ["steps..status"]),
        (".inputs.n > .iteration", ["inputs.n", "iteration"]),  # CEL's root-qualified names
    ],
)
def test_only_a_plain_string_index_extends_a_dotted_reference(expr, identifiers):
    """Anything else reads the whole container (the loader checks what it can name)."""
    assert compile_expr(expr).identifiers == identifiers


def test_the_name_a_macro_binds_is_not_a_reference():
    references = compile_expr("inputs.xs.exists(x, x > steps.a.outputs.n)").references
    assert [str(r) for r in references] == ["inputs.xs", "steps.a.outputs.n"]


@pytest.mark.parametrize(
    "expr",
    ["inputs.xs.exists(1, true)", "inputs.xs.all(steps.s, steps.s > 0)", "inputs.xs.map(x)"],
)
def test_a_macro_binding_no_plain_name_is_refused_when_compiled(expr):
    """cel-python refused these only when evaluating, quoting its parse tree as the reason."""
    with pytest.raises(CelSyntaxError, match=r"takes a name and an expression"):
        compile_expr(expr)


def test_a_syntax_error_reads_with_its_column_and_expression():
    with pytest.raises(CelSyntaxError) as caught:
        compile_expr("outputs.x >")
    assert (
        str(caught.value) == "CEL syntax error: unexpected end of expression (column 11 of "
        "'outputs.x >')"
    )
    assert caught.value.expr == "outputs.x >"


@pytest.mark.parametrize(
    "expr, message",
    [
        ("inputs.s % 2 == 1", "found no matching overload for % applied to '(string, double)'"),
        (
            "inputs.n % inputs.s == 1",
            "found no matching overload for % applied to '(double, string)'",
        ),
        ("inputs.n % 0 == 1", "modulus or divide by zero"),
        ("inputs.xs['a'] == 1", "found no matching overload for _[_] applied to '(list, string)'"),
        ("{'a': 1}[1] == 1", "found no matching overload for _[_] applied to '(map, double)'"),
        ("inputs.s < 1", "found no matching overload for < applied to '(string, double)'"),
        ("-inputs.s == 1", "found no matching overload for unary_neg applied to '(string)'"),
        ("undefined_var == 1", "undeclared reference to 'undefined_var'"),
        (
            "inputs.n.foo == 1",
            "DoubleType(3.0) with type: 'double' does not support field selection",
        ),
    ],
)
def test_an_evaluation_error_names_the_operator_and_the_operand_types(expr, message):
    """What a route decision shows for a condition that could not be evaluated."""
    act = build_activation(inputs={"n": 3, "s": "a", "xs": [1, 2]}, steps={})
    with pytest.raises(CelEvaluationError) as caught:
        compile_expr(expr).evaluate(act)
    assert (caught.value.message, caught.value.expr, str(caught.value)) == (message, expr, message)


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("string(false)", "false"),
        ("string(true)", "true"),
        ("string(9007199254740992.0)", "9007199254740992"),  # 2**53, the last exact integer
        ("string(9007199254740992.0 * 2.0)", "1.8014398509481984e+16"),
        ("string(inputs.n / 2)", "1.5"),
    ],
)
def test_string_writes_whole_numbers_as_integers_up_to_2_to_the_53(expr, expected):
    act = build_activation(inputs={"n": 3}, steps={})
    assert compile_expr(expr).evaluate(act) == expected


@pytest.mark.parametrize(
    "expr, identifiers, calls",
    [
        ("size(inputs) > 0", ["inputs"], ["size"]),  # a function's argument is never bound
        ("inputs.s.contains(n)", ["inputs.s", "n"], ["contains"]),  # nor a method's
        (".size(inputs.xs) > 0", ["inputs.xs"], ["size"]),
        ("frobnicate() == 1", [], ["frobnicate"]),
    ],
)
def test_calls_and_their_arguments_are_read(expr, identifiers, calls):
    compiled = compile_expr(expr)
    assert compiled.identifiers == identifiers
    assert [call.name for call in compiled.calls] == calls


def test_hex_literals_keep_their_value():
    assert compile_expr("0x1F == 31 && 0x10 + 1 == 17").evaluate(activation()) is True


def test_the_nesting_limit_is_exact():
    """24 parentheses compile, 25 do not (MAX_TREE_DEPTH counts the parse tree's levels)."""
    compile_expr("(" * 24 + "1" + ")" * 24)
    with pytest.raises(CelSyntaxError, match="nests too deeply"):
        compile_expr("(" * 25 + "1" + ")" * 25)


def test_a_field_named_by_a_string_index_is_read_as_a_dotted_reference() -> None:
    compiled = compile_expr("steps['draft'].outputs[\"score\"] > 0.5")
    assert compiled.identifiers == ["steps.draft.outputs.score"]


# -- values in and out, found by mutation testing (tests/engine/MUTANTS.md) ----------------------


class Wrapped(enum.Enum):
    """An enum member whose value is itself nested: to_cel converts the value."""

    LEVEL = "unused"


def _nested(kind: str, levels: int) -> object:
    """A value ``levels`` lists or mappings deep around 1."""
    value: object = 1
    for _ in range(levels):
        value = [value] if kind == "list" else {"k": value}
    return value


class Holder(BaseModel):
    inner: object


@pytest.mark.parametrize("kind", ["list", "map"])
def test_a_value_may_nest_100_levels_deep_and_no_deeper(kind: str) -> None:
    assert from_cel(to_cel(_nested(kind, 100))) == _nested(kind, 100)
    with pytest.raises(ValueError) as refused:
        to_cel(_nested(kind, 101))
    assert str(refused.value) == "value nests more than 100 levels deep"


def test_a_model_converts_as_its_json_dump_one_level_down() -> None:
    stamped = Holder(inner={"at": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "n": 2})
    assert from_cel(to_cel(stamped)) == {"inner": {"at": "2026-01-02T03:04:05Z", "n": 2}}
    deepest = Holder(inner=_nested("map", 98))
    assert from_cel(to_cel(deepest)) == {"inner": _nested("map", 98)}
    with pytest.raises(ValueError, match="nests more than 100 levels"):
        to_cel(Holder(inner=_nested("map", 99)))


def test_an_enum_converts_as_its_value_one_level_down() -> None:
    deep = Wrapped.LEVEL
    object.__setattr__(deep, "_value_", _nested("list", 99))
    try:
        assert from_cel(to_cel(deep)) == _nested("list", 99)
        object.__setattr__(deep, "_value_", _nested("list", 100))
        with pytest.raises(ValueError, match="nests more than 100 levels"):
            to_cel(deep)
    finally:
        object.__setattr__(deep, "_value_", "unused")


@pytest.mark.parametrize(
    ("given", "instant"),
    [
        (dt.datetime(2026, 1, 2, 3, 4, 5), dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)),
        (
            dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            dt.datetime(2026, 1, 2, 1, 4, 5, tzinfo=dt.UTC),
        ),
    ],
)
def test_a_datetime_without_a_zone_is_read_as_utc_and_one_with_a_zone_keeps_it(
    given: dt.datetime, instant: dt.datetime
) -> None:
    assert from_cel(to_cel(given)) == instant
    assert compile_expr("inputs.at").evaluate(activation(inputs={"at": given})) == instant


def test_bytes_convert_both_ways_and_joined_bytes_stay_bytes() -> None:
    assert from_cel(to_cel(b"\x00ab")) == b"\x00ab"
    assert compile_expr("inputs.raw + b'c'").evaluate(activation(inputs={"raw": b"ab"})) == b"abc"


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("int(2.7)", 2),
        ("uint(3)", 3),
        ("duration('90s')", 90.0),
        ("inputs.exact", 2**53),
        ("inputs.beyond", float(2**53 + 2)),
    ],
)
def test_results_come_back_as_plain_python_numbers(expr: str, expected: object) -> None:
    inputs = {"exact": 2**53, "beyond": 2**53 + 2}
    result = compile_expr(expr).evaluate(activation(inputs=inputs))
    assert (result, type(result)) == (expected, type(expected))


@pytest.mark.parametrize(
    ("expr", "name"),
    [
        ("type(inputs.max_rounds)", "double"),
        ("type(inputs.query)", "string"),
        ("type(inputs.topics)", "list"),
        ("type(steps.draft.outputs)", "map"),
        ("type(null)", "null_type"),
        ("type(type(1))", "type"),
    ],
)
def test_a_type_comes_back_as_the_name_an_expression_gives_it(expr: str, name: str) -> None:
    """``type(x)`` as an output reads as CEL writes the type, not as a cel-python class."""
    assert compile_expr(expr).evaluate(activation()) == name


def test_an_activation_of_plain_values_is_converted_before_evaluating() -> None:
    assert compile_expr("inputs.n + 1").evaluate({"inputs": {"n": 2}}) == 3


def test_an_activation_made_without_an_iteration_is_at_iteration_0() -> None:
    assert compile_expr("iteration").evaluate(build_activation(inputs={}, steps={})) == 0


def test_a_step_may_be_given_as_a_plain_mapping() -> None:
    steps = {"a": {"status": "SUCCEEDED", "outputs": {"x": 1}}}
    made = build_activation(inputs={}, steps=steps)
    assert compile_expr("steps.a.outputs.x + 1").evaluate(made) == 2


@pytest.mark.parametrize(("given", "kind"), [(5, "int"), (None, "NoneType"), (["a"], "list")])
def test_an_expression_that_is_not_text_is_refused_naming_what_it_is(
    given: object, kind: str
) -> None:
    with pytest.raises(CelSyntaxError) as refused:
        compile_expr(given)  # type: ignore[arg-type]
    assert str(refused.value) == (
        f"an expression must be a string, got {kind} (column 1 of {str(given)!r})"
    )


def test_a_value_of_any_other_type_converts_as_its_text() -> None:
    assert from_cel(to_cel(Decimal("1.50"))) == "1.50"


def test_a_runs_kept_steps_map_reads_as_its_views_and_takes_one_changed_entry() -> None:
    """StepsMap (issue 26): the ``steps`` a run keeps for every activation, one entry
    replaced when a step changes."""
    kept = StepsMap({"a": StepView(status="SUCCEEDED", outputs={"x": 1}), "b": StepView()})
    read = compile_expr("steps.a.outputs.x == 1 && steps.b.status == 'PENDING'")
    assert read.evaluate(build_activation(inputs={}, steps=kept)) is True
    kept.put("b", StepView(status="FAILED"))
    failed = compile_expr("steps.b.status").evaluate(build_activation(inputs={}, steps=kept))
    assert failed == "FAILED"
    assert sorted(kept.cel) == ["a", "b"]
