"""Field schemas written in YAML (``{type, required, default, description}``) as pydantic models.

Agents declare their output and tools their input this way; a registry file
holds no Python, so the model class is built from the declaration when the
registry loads.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from engine.spec import InputType
from plumbing.frozen import Frozen

_PYTHON_TYPES: dict[str, Any] = {
    "string": str,
    "int": int,
    "float": float,
    "bool": bool,
    "date": _dt.date,
    "list": list[Any],
    "dict": dict[str, Any],
}


class FieldSpec(Frozen):
    type: InputType = "string"
    required: bool = False
    default: Any = None
    description: str = ""


class _Declared(BaseModel):
    model_config = ConfigDict(extra="forbid")


def build_model(name: str, fields: dict[str, FieldSpec]) -> type[BaseModel]:
    """A pydantic model with one attribute per declared field; extra keys are refused."""
    definitions: dict[str, Any] = {}
    for field_name, spec in fields.items():
        python_type = _PYTHON_TYPES[spec.type]
        if spec.required:
            definitions[field_name] = (python_type, Field(description=spec.description))
        else:
            definitions[field_name] = (
                python_type | None,
                Field(default=spec.default, description=spec.description),
            )
    model: type[BaseModel] = create_model(name, __base__=_Declared, **definitions)
    return model


def describe(fields: dict[str, FieldSpec]) -> dict[str, str]:
    """Field name → a short type description, for prompts and ``registry show``."""
    return {
        name: f"{spec.type}{' (required)' if spec.required else ''}"
        + (f" — {spec.description}" if spec.description else "")
        for name, spec in fields.items()
    }
