"""Models the engine builds from its own values without validating them again
(engine/trusted.py), and the events it appends that way (``BaseRunStore.append_new``): each is
exactly what validation would have built — the same fields, the same set fields, the same
JSON — and the same event once stored and read back."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.events import (
    Budget,
    GraphEdge,
    GraphNode,
    Log,
    RunEvent,
    StepFinished,
    StepSkipped,
    StepStarted,
)
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import StepStatus
from engine.store import BaseRunStore, InMemoryRunStore, StepResult
from engine.trusted import (
    Deferred,
    json_bytes,
    json_data,
    replaced,
    trusted,
    trusted_from,
    trusted_whole,
    validated,
)
from tests.stores import ALL, store_opener

WF = WorkflowDefinition(name="trusted", steps=[StepSpec(id="a", uses="demo.echo")])

BUILT: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (
        StepStarted,
        {"run_id": "r", "step_id": "a", "iteration": 2, "attempt": 1, "inputs": {"x": [1]}},
    ),
    (
        StepFinished,
        {
            "run_id": "r",
            "step_id": "a",
            "iteration": 0,
            "outputs": {"text": "hi", "n": 1.5},
            "duration_s": 0.25,
            "llm_calls": 2,
            "tokens": 30,
            "providers": ["fake"],
            "replayed_calls": 1,
            "fallback_calls": 0,
        },
    ),
    (StepSkipped, {"run_id": "r", "step_id": "a", "iteration": 1, "reason": "when is false"}),
    (
        Budget,
        {
            "run_id": "r",
            "step_runs": 3,
            "llm_calls": 0,
            "tokens": 0,
            "max_step_runs": 40,
            "max_llm_calls": 300,
            "token_budget": 500_000,
            "elapsed_s": 0.5,
            "cost_usd": 0.0,
            "max_cost_usd": None,
        },
    ),
    (StepStarted, {"run_id": "r", "step_id": "a"}),  # defaults, and a fresh list per model
    (
        StepResult,
        {
            "step_id": "a",
            "status": StepStatus.SUCCEEDED,
            "iteration": 1,
            "outputs": {"k": "v"},
            "reason": "",
            "routed_by": ["r1"],
            "not_routed_by": [],
            "runs": 2,
            "history": [],
        },
    ),
    (GraphNode, {"id": "a", "uses": "demo.echo", "group": None}),
    (GraphEdge, {"source": "a", "target": "b", "kind": "route"}),
]


@pytest.mark.parametrize(("kind", "fields"), BUILT, ids=lambda v: getattr(v, "__name__", ""))
def test_a_trusted_model_is_the_validated_one(
    kind: type[BaseModel], fields: dict[str, Any]
) -> None:
    built, validated = trusted(kind, **fields), kind(**fields)
    assert built == validated
    assert type(built) is kind
    assert built.model_fields_set == validated.model_fields_set
    assert json_bytes(built).decode() == validated.model_dump_json()
    assert built.model_dump() == validated.model_dump()
    assert repr(built) == repr(validated)
    assert pickle.loads(pickle.dumps(built)) == validated  # every slot pydantic keeps is set


@pytest.mark.parametrize(("kind", "fields"), BUILT, ids=lambda v: getattr(v, "__name__", ""))
def test_a_trusted_model_of_every_field_in_or_out_of_order_is_the_validated_one(
    kind: type[BaseModel], fields: dict[str, Any]
) -> None:
    """``trusted_from`` puts a dict of every field in declaration order (taken as it came, its
    JSON would begin with another field — the in-memory store's rows alike are made by
    replacing the leading step id — and its ``repr`` would differ); ``trusted_whole`` takes
    one in that order as it is."""
    every = {
        name: fields[name] if name in fields else info.get_default(call_default_factory=True)
        for name, info in kind.model_fields.items()
    }
    backwards = dict(reversed(every.items()))
    validated = kind(**every)
    for built in trusted_from(kind, backwards), trusted_whole(kind, every):
        assert built == validated
        assert json_bytes(built).decode() == validated.model_dump_json()
        assert repr(built) == repr(validated)
        assert built.model_fields_set == set(kind.model_fields)


def test_a_whole_models_set_fields_are_a_set_of_its_own() -> None:
    """``trusted_whole`` copies one set of every field name per model: each model's
    ``model_fields_set`` is a ``set`` as validation makes it, and changing one changes no
    other's."""
    kind, fields = BUILT[-3]
    first, second = trusted_whole(kind, dict(fields)), trusted_whole(kind, dict(fields))
    assert type(first.model_fields_set) is set
    first.model_fields_set.discard("runs")
    assert (
        second.model_fields_set
        == set(kind.model_fields)
        == trusted_whole(kind, fields).model_fields_set
    )


@pytest.mark.parametrize(("kind", "fields"), BUILT, ids=lambda v: getattr(v, "__name__", ""))
def test_validated_is_model_validate(kind: type[BaseModel], fields: dict[str, Any]) -> None:
    """A step's inputs and the outputs it returns as a dict are validated so
    (engine/runner.py): the same model, and the same refusal of bad data."""
    model = validated(kind, fields)
    assert type(model) is kind
    assert model == kind.model_validate(fields)
    assert model.model_fields_set == kind.model_validate(fields).model_fields_set
    bad = {**fields, "unknown": 1}
    with pytest.raises(ValidationError) as ours:
        validated(kind, bad)
    with pytest.raises(ValidationError) as theirs:
        kind.model_validate(bad)
    assert ours.value.errors() == theirs.value.errors()


_ODD_VALUES: list[Any] = [
    'quote " backslash \\ tab \t nul \x00 bell \x07 del \x7f',
    "é ß 中文 🙂 \u2028 \ufeff",
    0.1,
    1e-7,
    1e16,
    1.5e300,
    -0.0,
    2**70,
    -(2**63),
    True,
    None,
    [1, [2.5, {"k": None}], "x"],
    {"nested": {"deeper": [True, False, 0]}, "": ""},
]


@pytest.mark.parametrize(("kind", "fields"), BUILT, ids=lambda v: getattr(v, "__name__", ""))
def test_a_deferred_model_is_trusted_froms_and_its_json_the_models(
    kind: type[BaseModel], fields: dict[str, Any]
) -> None:
    """An event the engine appends is written from its fields (the in-memory store) and built
    only when asked: the JSON is the model's byte for byte, and the model is
    :func:`trusted_from`'s, built once."""
    deferred = Deferred(kind, dict(fields))
    model = deferred.model()
    assert deferred.model() is model
    assert model == trusted_from(kind, fields) == kind(**fields)
    assert model.model_fields_set == kind(**fields).model_fields_set
    assert model.__dict__ is deferred.fields
    assert deferred.json() == json_bytes(model) == kind(**fields).model_dump_json().encode()
    assert Deferred(kind, dict(fields)).fields == model.__dict__


@pytest.mark.parametrize("value", _ODD_VALUES, ids=[f"odd{n}" for n in range(len(_ODD_VALUES))])
def test_a_deferred_events_json_is_the_models_for_odd_values(value: Any) -> None:
    """Strings with escapes and characters beyond ASCII, floats at the edges of their
    formatting, integers past 64 bits, nested data — in an event's free field and as a string
    or a float where the type allows — come out as the model's JSON does."""
    cases: list[tuple[type[BaseModel], dict[str, Any]]] = [
        (StepFinished, {"run_id": "r", "step_id": "a", "outputs": {"v": value, "w": [value]}}),
        (StepStarted, {"run_id": "r", "step_id": "a", "inputs": {"in": value}}),
    ]
    if isinstance(value, str):
        cases.append((StepSkipped, {"run_id": value, "step_id": value, "reason": value}))
    if isinstance(value, float):
        cases.append((Budget, {**BUILT[3][1], "elapsed_s": value, "max_cost_usd": value}))
    for kind, fields in cases:
        assert Deferred(kind, fields).json() == kind(**fields).model_dump_json().encode()


def test_a_deferred_events_json_writes_infinity_and_nan_as_the_model_does() -> None:
    for value in (float("inf"), float("-inf"), float("nan")):
        fields = {"run_id": "r", "step_id": "a", "duration_s": value}
        assert Deferred(StepFinished, fields).json() == json_bytes(
            trusted_from(StepFinished, fields)
        )


def test_an_event_nobody_subscribes_to_is_stored_without_its_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The in-memory store writes an event of the engine's own values from its fields; its
    model is built for a subscriber, once, and only then."""
    built: list[type[BaseModel]] = []
    build = Deferred.model

    def counted(deferred: Deferred[Any]) -> Any:
        built.append(deferred.cls)
        return build(deferred)

    monkeypatch.setattr(Deferred, "model", counted)
    store = InMemoryRunStore()
    run_id = store.create_run(WF, {}, "kahn", "")
    with store.batch():
        store.append_new(StepStarted, run_id=run_id, step_id="a")
    assert built == []
    seen: list[RunEvent] = []
    store.subscribe(seen.extend, run_id)
    with store.batch():
        store.append_new(StepStarted, run_id=run_id, step_id="a", attempt=2)
    store.bus.close()
    assert built == [StepStarted]
    assert seen == store.events(run_id)[1:] and seen[0].model_fields_set == {
        "run_id",
        "step_id",
        "attempt",
        "seq",
        "ts",
        "mono",
    }


class _Extras(BaseModel):
    model_config = ConfigDict(extra="allow")
    status: StepStatus = StepStatus.PENDING
    when: float = 0.5
    span: tuple[int, int] = (0, 1)
    """A tuple: a list in JSON data, so data that is not JSON's shows."""


@pytest.mark.parametrize(
    "model",
    [kind(**fields) for kind, fields in BUILT]
    + [_Extras(), _Extras(status=StepStatus.FAILED, extra={"nested": [1, None]}, n=2**70)],
    ids=lambda model: type(model).__name__,
)
def test_json_data_is_the_models_json_dump(model: BaseModel) -> None:
    """A step's inputs and outputs are dumped so (engine/runner.py): the same data as
    ``model_dump(mode="json")``, enums and extras included."""
    data = json_data(model)
    assert data == model.model_dump(mode="json")
    assert json.loads(json.dumps(data)) == data  # JSON's own types: a tuple comes back a list
    assert data is not json_data(model)  # a new dict each time


def test_a_trusted_model_is_frozen_and_gets_fresh_defaults() -> None:
    first, second = (
        trusted(StepStarted, run_id="r", step_id="a"),
        trusted(StepStarted, run_id="r", step_id="b"),
    )
    assert first.inputs == {} and first.inputs is not second.inputs
    with pytest.raises(ValueError, match="frozen"):
        first.step_id = "c"  # type: ignore[misc]


def test_replaced_is_model_copy_with_the_update() -> None:
    event = StepStarted(run_id="r", step_id="a", inputs={"x": 1})
    copy = replaced(event, seq=7, ts=1.5, mono=0.25)
    expected = event.model_copy(update={"seq": 7, "ts": 1.5, "mono": 0.25})
    assert copy == expected and copy.model_fields_set == expected.model_fields_set
    assert json_bytes(copy).decode() == expected.model_dump_json()
    assert pickle.loads(pickle.dumps(copy)) == expected
    assert event.seq == 0  # the original is left as it was


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int = 0


class _Private(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int = 0
    _secret: int = 0


class _Mutable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int = 0


class _Factory(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    items: list[int] = Field(default_factory=list)


@pytest.mark.parametrize("kind", [_Open, _Private, _Mutable])
def test_only_frozen_models_without_extras_or_private_attributes_are_built_so(
    kind: type[BaseModel],
) -> None:
    with pytest.raises(TypeError, match="only frozen models without extras or privates"):
        trusted(kind, a=1)
    with pytest.raises(TypeError, match="only frozen models without extras or privates"):
        replaced(kind(a=1), a=2)
    with pytest.raises(TypeError, match="only frozen models without extras or privates"):
        trusted_whole(kind, {"a": 1})


def test_a_default_factory_is_called_only_for_a_field_not_given() -> None:
    assert trusted(_Factory).items == [] and trusted(_Factory, items=[3]).items == [3]
    assert trusted(_Factory).model_fields_set == set()


@pytest.fixture(params=ALL)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseRunStore]:
    opened = store_opener(request.param, request, tmp_path)()
    yield opened
    opened.close()


def test_append_new_stores_and_returns_what_append_does(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {}, "kahn", "")
    seen: list[RunEvent] = []
    store.subscribe(seen.extend, run_id)
    fields = {"run_id": run_id, "step_id": "a", "outputs": {"x": 1}, "duration_s": 0.5}
    with store.batch():
        first = store.append(Log(run_id=run_id, message="before"))
        store.append_new(StepFinished, **fields)
        appended = store.append(StepFinished(**fields))
    stored = store.events(run_id)
    built = stored[1]
    assert (first.seq, built.seq, appended.seq) == (1, 2, 3)
    assert built.model_copy(update={"seq": 3, "ts": appended.ts, "mono": appended.mono}) == appended
    assert stored[2] == appended
    store.bus.close()
    assert [event.seq for event in seen] == [1, 2, 3]
    assert seen[1] == built and seen[1].model_fields_set == appended.model_fields_set


def test_a_model_class_met_for_the_first_time_is_laid_out_from_its_fields() -> None:
    """A class defined here is new to the cache of layouts on every run of the test: its
    defaults, its factories and its refusal are worked out from its fields, not remembered."""

    class Fresh(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        name: str
        count: int = 3
        note: str | None = "kept"
        items: list[int] = Field(default_factory=lambda: [1])

    built, validated = trusted(Fresh, name="a"), Fresh(name="a")
    assert built == validated and built.model_fields_set == validated.model_fields_set == {"name"}
    assert json_bytes(built).decode() == validated.model_dump_json()
    assert built.items is not trusted(Fresh, name="b").items
    given = trusted(Fresh, name="c", count=0, note=None, items=[])
    assert given == Fresh(name="c", count=0, note=None, items=[])
    assert replaced(given, count=5) == given.model_copy(update={"count": 5})

    every = {"name": "d", "count": 1, "note": None, "items": [2]}
    whole = trusted_whole(Fresh, every)
    assert whole == Fresh(**every) and whole.model_fields_set == set(Fresh.model_fields)

    class Loose(BaseModel):
        model_config = ConfigDict(extra="ignore")
        a: int = 0

    class FrozenOpen(BaseModel):
        model_config = ConfigDict(extra="allow", frozen=True)
        a: int = 0

    for refused in (Loose, FrozenOpen):
        with pytest.raises(TypeError, match="only frozen models"):
            trusted(refused)


def test_the_slots_set_are_every_slot_of_basemodel() -> None:
    """A pydantic release adding a slot to BaseModel would leave it unset in a trusted model:
    this fails first, saying to set the new slot too."""
    assert set(BaseModel.__slots__) == {
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    }
