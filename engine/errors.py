"""What the engine reports: a workflow's located problems (raised together), and a
failure described in one line."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One problem in a workflow file, at a 1-based line and column; the message is one line
    (line breaks in quoted values are shown as \\n)."""

    file: str
    line: int
    column: int
    message: str

    def __post_init__(self) -> None:
        one_line = self.message.replace("\r", "\\r").replace("\n", "\\n")
        object.__setattr__(self, "message", one_line)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


class WorkflowLoadError(Exception):
    """A workflow that cannot be loaded; ``problems`` says every reason found, in file order.

    ``str(error)`` is one problem per line, ready to print.
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        unique = sorted(set(problems), key=lambda p: (p.line, p.column, p.message))
        if not unique:
            raise ValueError("a WorkflowLoadError needs at least one problem")
        self.problems: list[Problem] = unique
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)


def describe_exception(error: BaseException) -> str:
    """``Type: first line of the message`` — a failure shown in one line."""
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
