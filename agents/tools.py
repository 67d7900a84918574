"""Tool implementations: the Python callables registry tools run.

A registry file names an implementation: either one a package registered here
(``runs: corpus.search``), the way steps register in ``engine.steps`` —
research registers its corpus tools, so the engine stays ignorant of the
corpus — or a Python callable by its import path (``runs: mypkg.tools:lookup``),
imported when the registry loads. An implementation is
``async def impl(ctx: StepContext, args: dict) -> dict`` — ``args`` already
validated against the tool's declared input — and its result is the agent's
observation, journaled, so a re-run never calls it twice. An implementation
registered with ``run_effect=True`` acts only on its own run's things (a file in
the run's folder): it is journaled as ``engine.journal.RUN_EFFECT``, so a run
replaying another's journal (shadow mode's second engine) runs it for itself.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from engine.journal import RUN_EFFECT

if TYPE_CHECKING:
    from engine.context import StepContext

ToolFunction = Callable[["StepContext", dict[str, Any]], Awaitable[dict[str, Any]]]
F = TypeVar("F", bound=ToolFunction)


class ToolImplementations:
    def __init__(self) -> None:
        self._functions: dict[str, ToolFunction] = {}
        self._run_effects: set[str] = set()

    def register(self, name: str, function: ToolFunction, *, run_effect: bool = False) -> None:
        self._functions[name] = function
        if run_effect:
            self._run_effects.add(name)
        else:
            self._run_effects.discard(name)

    def journal_kind(self, name: str) -> str:
        """How a call of ``name`` is journaled: its own run's effect, or a tool call."""
        return RUN_EFFECT if name in self._run_effects else "tool"

    def get(self, name: str) -> ToolFunction:
        found = self._functions.get(name)
        if found is None:
            found, problem = import_implementation(name)
            if found is None:
                raise KeyError(problem)
        return found

    def names(self) -> list[str]:
        return sorted(self._functions)

    def __contains__(self, name: object) -> bool:
        return name in self._functions


def import_implementation(path: str) -> tuple[ToolFunction | None, str]:
    """(the async function at ``module:attribute``, "") or (None, why not)."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        return None, f"'{path}' is neither a registered implementation nor module:function"
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - any import failure is the user's to fix
        return None, f"cannot import {module_name}: {type(error).__name__}: {error}"
    function = getattr(module, attribute, None)
    if not inspect.iscoroutinefunction(function):
        return None, f"{path} is not an async function (async def f(ctx, args) -> dict)"
    return cast(ToolFunction, function), ""


TOOL_IMPLEMENTATIONS = ToolImplementations()
"""The process-wide set; packages register into it when imported."""


def tool_implementation(
    name: str, registry: ToolImplementations | None = None, *, run_effect: bool = False
) -> Callable[[F], F]:
    def decorate(function: F) -> F:
        (registry or TOOL_IMPLEMENTATIONS).register(name, function, run_effect=run_effect)
        return function

    return decorate


@tool_implementation("builtin.echo")
async def echo(ctx: StepContext, args: dict[str, Any]) -> dict[str, Any]:
    """Returns its arguments: a tool with no side effect, for trying an agent out."""
    return {"echo": args}
