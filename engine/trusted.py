"""Frozen models built from values the engine made itself, without validating them again.

A run writes several models per step — its events, the step's result — and validating
each costs more than the rest of what it takes to build it. Their values are the engine's
own: the step's validated outputs and inputs (already plain JSON data), its counters, its
enums. These two functions build such a model the way pydantic's validation would leave
it (the same fields, the same ``model_fields_set``), at a third of the cost. Values from
outside — a definition, a stored row, a step's answer — are still validated where they
enter; this is only for the engine's hot path, and only for the models of
:class:`plumbing.frozen.Frozen` kind: frozen, no extra fields, no private attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticUndefined
from pydantic_core import to_json as _to_json

_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class _Layout:
    defaults: dict[str, Any]
    """Every field, in declaration order, with its default (None for a required one)."""
    factories: tuple[tuple[str, Any], ...]
    """(field, its ``default_factory``): a fresh value per model."""
    names: frozenset[str]
    """Every field: a whole model's ``model_fields_set``, copied (cheaper than a set built from
    a dict's keys)."""


_LAYOUTS: dict[type[BaseModel], _Layout] = {}


def _layout(cls: type[BaseModel]) -> _Layout:
    layout = _LAYOUTS.get(cls)
    if layout is None:
        config = cls.model_config
        if (
            not config.get("frozen")
            or config.get("extra") != "forbid"
            or cls.__private_attributes__
        ):
            raise TypeError(f"{cls.__name__}: only frozen models without extras or privates")
        defaults: dict[str, Any] = {}
        factories = []
        for name, info in cls.model_fields.items():
            defaults[name] = None if info.default is PydanticUndefined else info.default
            if info.default_factory is not None:
                factories.append((name, info.default_factory))
        layout = _LAYOUTS[cls] = _Layout(defaults, tuple(factories), frozenset(defaults))
    return layout


def trusted(cls: type[_M], **values: Any) -> _M:
    """``cls(**values)`` without validation: ``values`` must already be of the fields' types
    (an int for an int, a float for a float, a list for a list, plain JSON data for ``Any``),
    and must hold every required field."""
    return trusted_from(cls, values)


def trusted_from(cls: type[_M], values: dict[str, Any]) -> _M:
    """:func:`trusted` of a dict the caller hands over: merged into the defaults, which puts
    its fields in declaration order, as validation does (the order of a model's JSON and of
    its ``repr``)."""
    return Deferred(cls, values).model()


class Deferred(Generic[_M]):
    """:func:`trusted_from`'s model, built only when something asks for it (:meth:`model`):
    its fields, merged at once, are all its JSON needs (:meth:`json`). The engine appends
    three events a step; a store that keeps their JSON (the in-memory one) and a run nobody
    subscribes to never need their models — building one costs about as much as its JSON."""

    __slots__ = ("cls", "values", "fields", "_model")

    def __init__(self, cls: type[_M], values: dict[str, Any]) -> None:
        self.cls = cls
        self.values = values
        """As given: the model's set fields."""
        layout = _LAYOUTS.get(cls) or _layout(cls)
        fields = {**layout.defaults, **values}
        for name, factory in layout.factories:
            if name not in values:
                fields[name] = factory()
        self.fields = fields
        """The model's ``__dict__``: ``values`` merged into the defaults, in declaration
        order, each default factory called for a field not given."""
        self._model: _M | None = None

    def model(self) -> _M:
        """The model, built once: ``trusted_from(cls, values)``."""
        if self._model is None:
            self._model = _built(self.cls, self.fields, set(self.values))
        return self._model

    def json(self) -> bytes:
        """``json_bytes(self.model())`` without the model: its fields' JSON, which is the
        model's for the models built so — frozen, without extras, privates, aliases or
        serializers of their own, of the fields' types (checked for each event kind the
        engine appends this way, test_trusted.py)."""
        return _to_json(self.fields, inf_nan_mode="null")


def trusted_whole(cls: type[_M], fields: dict[str, Any]) -> _M:
    """A model whose ``__dict__`` is ``fields`` as it is, each field set explicitly: the caller
    gives every field of ``cls``, in declaration order, of its type — nothing is filled in or
    reordered (a step's result row is built so, twice a step: :func:`trusted_from` would merge
    it into the defaults for nothing)."""
    layout = _LAYOUTS.get(cls) or _layout(cls)  # only the models trusted_from takes
    return _built(cls, fields, set(layout.names))


def replaced(model: _M, **values: Any) -> _M:
    """``model.model_copy(update=values)`` without pydantic's generic copying: as there, the
    new values are not validated."""
    cls = type(model)
    if cls not in _LAYOUTS:
        _layout(cls)
    return _built(cls, {**model.__dict__, **values}, model.model_fields_set | values.keys())


def _built(cls: type[_M], fields: dict[str, Any], fields_set: set[str]) -> _M:
    """A ``cls`` whose ``__dict__`` is ``fields``, with no extras and no private values."""
    model = _new(cls)
    _set_dict(model, fields)
    _set_fields_set(model, fields_set)
    _set_extra(model, None)
    _set_private(model, None)
    return model


# BaseModel's own slots, set through their descriptors: ``object.__setattr__`` looks each
# name up again on every call (a model or two per event, several events a step)
_new = object.__new__
_set_dict = vars(BaseModel)["__dict__"].__set__
_set_fields_set = vars(BaseModel)["__pydantic_fields_set__"].__set__
_set_extra = vars(BaseModel)["__pydantic_extra__"].__set__
_set_private = vars(BaseModel)["__pydantic_private__"].__set__


def json_bytes(model: BaseModel) -> bytes:
    """``model.model_dump_json()``, encoded: the same text, without the method's handling of
    options none of the store's writes pass (a third of its cost for an event), nor its
    decoding (what reads it back takes bytes)."""
    return model.__pydantic_serializer__.to_json(model)


def validated(cls: type[_M], data: Any) -> _M:
    """``cls.model_validate(data)``: the same validation, without the method's passing on of
    options left at their defaults (a third of its cost for a small model; a step's inputs
    are validated so on every step, and its outputs when it returns a dict)."""
    return cls.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]


def json_data(model: BaseModel) -> dict[str, Any]:
    """``model.model_dump(mode="json")``: the same data, without the method's passing on of
    options left at their defaults (two thirds of its cost for a small model; a step's inputs
    and outputs are dumped so once each)."""
    return model.__pydantic_serializer__.to_python(model, mode="json")  # type: ignore[no-any-return]
