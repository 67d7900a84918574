"""The problems collector every loading stage reports into, each at a file position."""

from __future__ import annotations

from typing import Protocol

from engine.errors import Problem, WorkflowLoadError


class Located(Protocol):
    """Anything written at a 1-based line and column (a YAML node)."""

    @property
    def line(self) -> int: ...

    @property
    def column(self) -> int: ...


class Problems:
    """Every problem found in one workflow file, in the order found."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.found: list[Problem] = []

    def add(self, at: Located | tuple[int, int] | None, message: str) -> None:
        """Record ``message`` at a node, a (line, column), or the file's start (None)."""
        if at is None:
            line, column = 1, 1
        elif isinstance(at, tuple):
            line, column = at
        else:
            line, column = at.line, at.column
        self.found.append(Problem(self.source, line, column, message))

    def __bool__(self) -> bool:
        return bool(self.found)

    def raise_if_any(self) -> None:
        if self.found:
            raise WorkflowLoadError(self.found)
