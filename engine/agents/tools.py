"""Tool implementations: the Python callables registry tools run (``runs: corpus.search``).

A registry file names an implementation; a package registers it here, the way
steps register in ``engine.steps``. Research registers its corpus tools, so
the engine stays ignorant of the corpus. An implementation is
``async def impl(ctx: StepContext, args: dict) -> dict`` — ``args`` already
validated against the tool's declared input — and its result is the agent's
observation, journaled, so a re-run never calls it twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from engine.context import StepContext

ToolFunction = Callable[["StepContext", dict[str, Any]], Awaitable[dict[str, Any]]]
F = TypeVar("F", bound=ToolFunction)


class ToolImplementations:
    def __init__(self) -> None:
        self._functions: dict[str, ToolFunction] = {}

    def register(self, name: str, function: ToolFunction) -> None:
        self._functions[name] = function

    def get(self, name: str) -> ToolFunction:
        return self._functions[name]

    def names(self) -> list[str]:
        return sorted(self._functions)

    def __contains__(self, name: object) -> bool:
        return name in self._functions


TOOL_IMPLEMENTATIONS = ToolImplementations()
"""The process-wide set; packages register into it when imported."""


def tool_implementation(name: str, registry: ToolImplementations | None = None) -> Callable[[F], F]:
    def decorate(function: F) -> F:
        (registry or TOOL_IMPLEMENTATIONS).register(name, function)
        return function

    return decorate


@tool_implementation("builtin.echo")
async def echo(ctx: StepContext, args: dict[str, Any]) -> dict[str, Any]:
    """Returns its arguments: a tool with no side effect, for trying an agent out."""
    return {"echo": args}
