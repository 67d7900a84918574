"""The step registry: ``@step("name")`` registers an implementation under a name
that workflow YAML refers to with ``uses:``.

An implementation is ``async def impl(ctx: StepContext, inp: InputModel) -> OutputModel``
where both models are pydantic classes; the annotations are read once at
registration, so the loader can check ``uses`` and the runner can validate
inputs and outputs without asking the implementation.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from engine.context import StepContext

StepFunction = Callable[["StepContext", Any], Awaitable[Any]]
F = TypeVar("F", bound=StepFunction)


class AnyInput(BaseModel):
    """Input model for steps that take whatever they are given."""

    model_config = ConfigDict(extra="allow")


class AnyOutput(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class RegisteredStep:
    name: str
    function: StepFunction
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    description: str


class StepRegistry:
    def __init__(self) -> None:
        self._steps: dict[str, RegisteredStep] = {}

    def register(self, name: str, function: StepFunction) -> RegisteredStep:
        hints = get_type_hints(function)
        params = list(inspect.signature(function).parameters)
        if len(params) != 2:
            raise TypeError(f"step {name!r}: an implementation takes (ctx, inp), got {params}")
        input_model = hints.get(params[1], AnyInput)
        output_model = hints.get("return", AnyOutput)
        for model in (input_model, output_model):
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise TypeError(
                    f"step {name!r}: input and output must be pydantic models, got {model!r}"
                )
        registered = RegisteredStep(
            name=name,
            function=function,
            input_model=input_model,
            output_model=output_model,
            description=inspect.getdoc(function) or "",
        )
        self._steps[name] = registered
        return registered

    def get(self, name: str) -> RegisteredStep:
        return self._steps[name]

    def __contains__(self, name: object) -> bool:
        return name in self._steps

    def names(self) -> list[str]:
        return sorted(self._steps)


REGISTRY = StepRegistry()
"""The process-wide registry; packages register into it when imported."""


def step(name: str, registry: StepRegistry | None = None) -> Callable[[F], F]:
    def decorate(function: F) -> F:
        (registry or REGISTRY).register(name, function)
        return function

    return decorate
