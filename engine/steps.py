"""The step registry: ``@step("name")`` registers an implementation under a name
that workflow YAML refers to with ``uses:``.

An implementation is ``async def impl(ctx: StepContext, inp: InputModel) -> OutputModel``
where both models are pydantic classes; the annotations are read once at
registration, so the loader can check ``uses`` and the runner can validate
inputs and outputs without asking the implementation.

A family of steps may also be registered *later*: ``register_later(prefixes, load)`` keeps a
callable (importing the family's module, reading registry files) that runs the first time a
step named with one of the prefixes is asked for, or when every name is listed. So checking a
workflow imports only the families it names (`workbench validate` stays fast to start).
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


SectionProblems = list[tuple[tuple[str | int, ...], str]]
"""Problems found in a section: (path inside it, message)."""


@dataclass(frozen=True)
class WorkflowMode:
    """A workflow ``mode``: ``mode: NAME`` with a ``NAME`` mapping instead of ``steps``.

    The engine knows no mode of its own: whoever owns one (the agents own ``advisory``)
    registers it beside its steps. The loader checks the section with ``check`` and makes it
    the workflow's one step, ``uses: <uses>``, the section as its config.
    """

    step_id: str
    uses: str
    section_keys: str
    """The keys the section takes, for the message when it is missing."""
    runs_instead: str
    """What runs instead of steps, for the message when ``steps`` is written too."""
    check: Callable[[Any, StepRegistry], SectionProblems]


@dataclass(frozen=True)
class _LaterFamily:
    prefixes: tuple[str, ...]
    load: Callable[[], object]


class StepRegistry:
    def __init__(self) -> None:
        self._steps: dict[str, RegisteredStep] = {}
        self._later: list[_LaterFamily] = []
        self._later_prefixes: tuple[str, ...] = ()
        """Every prefix of ``_later``, to tell in one call that a name has nothing pending."""
        self._modes: dict[str, WorkflowMode] = {}

    def register_later(self, prefixes: tuple[str, ...], load: Callable[[], object]) -> None:
        """Have ``load`` register the steps whose names start with one of ``prefixes`` when
        the first of them is asked for (or every name is listed); it replaces an earlier
        pending ``load`` for the same prefixes and runs at most once. A family loaded before
        is loaded again (``load`` re-registers its names), as when the workspace changes."""
        self._set_later(
            [family for family in self._later if family.prefixes != prefixes]
            + [_LaterFamily(prefixes, load)]
        )

    def _set_later(self, later: list[_LaterFamily]) -> None:
        self._later = later
        self._later_prefixes = tuple(prefix for family in later for prefix in family.prefixes)

    def _load_families(self, name: str | None) -> None:
        """Run the pending loads for ``name`` (every pending load when it is None)."""
        if name is not None and not name.startswith(self._later_prefixes):
            return  # the common case, asked for every step a workflow names: nothing to load
        due = [f for f in self._later if name is None or name.startswith(f.prefixes)]
        self._set_later(
            [f for f in self._later if not (name is None or name.startswith(f.prefixes))]
        )
        for family in due:
            family.load()

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
        if self._later:
            self._load_families(name)
        return self._steps[name]

    def __contains__(self, name: object) -> bool:
        if self._later and isinstance(name, str):
            self._load_families(name)
        return name in self._steps

    def names(self) -> list[str]:
        self._load_families(None)
        return sorted(self._steps)

    def register_mode(self, name: str, mode: WorkflowMode) -> None:
        """Let workflows say ``mode: name`` (registered beside the steps the mode runs)."""
        self._modes[name] = mode

    def modes(self) -> dict[str, WorkflowMode]:
        """Every registered mode by name; which family registers one is not known before it
        loads, so every pending family is loaded first."""
        self._load_families(None)
        return dict(self._modes)


REGISTRY = StepRegistry()
"""The process-wide registry; packages register into it when imported."""


def step(name: str, registry: StepRegistry | None = None) -> Callable[[F], F]:
    def decorate(function: F) -> F:
        (registry or REGISTRY).register(name, function)
        return function

    return decorate
