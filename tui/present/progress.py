"""Progress of what a person waits for in a headless command: counts, never a blank terminal.

On a terminal it is a rich progress bar (description, bar, done/total, elapsed) that stays
under the lines the command prints; piped or redirected it is plain lines a log keeps, one
when a task starts, one each time it passes another tenth of its total, one when it ends — a
count, not a clock, decides, so the lines are the same on every machine.

:class:`RunProgress` is a run surface (tui/launch/run.py): it counts the steps a run has
settled and the research rounds it has scored, from the run's own events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from engine.events import (
    Domain,
    InterruptRaised,
    InterruptResolved,
    RunEvent,
    RunFinished,
    RunStarted,
    StepFailed,
    StepFinished,
    StepSkipped,
)
from research.events import ROUND_SCORED

PLAIN_STEPS = 10
"""Piped, a task prints a line each time it passes another 1/PLAIN_STEPS of its total."""


_BOARDS: dict[int, ProgressBoard] = {}
"""The board drawing on each console (by id), so a question asked there can pause it."""


@contextmanager
def paused(console: Console) -> Iterator[None]:
    """Stop the bars drawn on ``console`` while a question is asked there: a spinner redrawing
    under a prompt line writes over what the person types."""
    board = _BOARDS.get(id(console))
    if board is not None:
        board.pause()
    try:
        yield
    finally:
        if board is not None:
            board.resume()


class ProgressBoard:
    """Tasks with counts, shown as rich bars on a terminal or as plain lines when piped."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal and not console.is_dumb_terminal
        self._bars: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._plain: dict[str, tuple[int, int | None, int]] = {}
        """name → (completed, total, the last tenth printed)."""

    def __enter__(self) -> ProgressBoard:
        if self.live:
            self._bars = Progress(
                SpinnerColumn(),
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[note]}", style="dim"),
                TimeElapsedColumn(),
                console=self.console,
                transient=False,
            )
            self._bars.start()
        _BOARDS[id(self.console)] = self
        return self

    def __exit__(self, *_: object) -> None:
        if _BOARDS.get(id(self.console)) is self:
            del _BOARDS[id(self.console)]
        if self._bars is not None:
            self._bars.stop()
            self._bars = None

    def pause(self) -> None:
        """Stop drawing the bars (a question is asked on the terminal); :meth:`resume` redraws."""
        if self._bars is not None:
            self._bars.stop()

    def resume(self) -> None:
        if self._bars is not None:
            self._bars.start()

    def update(
        self,
        name: str,
        completed: int,
        total: int | None,
        *,
        note: str = "",
        label: str = "",
        final: bool = False,
    ) -> None:
        """Set task ``name`` to ``completed`` of ``total`` (None: not known yet); ``final``: the
        task's last word, printed when piped even if the count has not moved."""
        description = label or name
        if self._bars is not None:
            task = self._tasks.get(name)
            if task is None:
                self._tasks[name] = self._bars.add_task(
                    description, total=total, completed=completed, note=note
                )
            else:
                self._bars.update(
                    task, total=total, completed=completed, description=description, note=note
                )
            return
        self._plain_update(description, name, completed, total, note, final)

    def _plain_update(
        self,
        description: str,
        name: str,
        completed: int,
        total: int | None,
        note: str,
        final: bool,
    ) -> None:
        previous = self._plain.get(name)
        tenth = completed * PLAIN_STEPS // total if total else 0
        ended = total is not None and completed >= total
        show = (
            final
            or previous is None
            or (tenth > previous[2] or total != previous[1] or (ended and previous[0] < completed))
        )
        self._plain[name] = (completed, total, tenth if show or previous is None else previous[2])
        if show:
            count = f"{completed}/{total}" if total is not None else f"{completed}"
            extra = f" ({note})" if note else ""
            self.console.print(f"{description}: {count}{extra}", highlight=False, markup=False)


@contextmanager
def counting(
    console: Console, name: str, *, label: str = ""
) -> Iterator[Callable[[int, int], None]]:
    """A ``(done, total)`` callback that shows one task on a fresh board, for a single wait."""
    with ProgressBoard(console) as board:
        yield lambda done, total: board.update(name, done, total, label=label)


_FOLDED = frozenset(
    {
        "run_started",
        "step_finished",
        "step_skipped",
        "step_failed",
        "domain",
        "interrupt_raised",
        "interrupt_resolved",
        "run_finished",
    }
)
"""The kinds of event :meth:`RunProgress._fold` reads. The others — ``step_started`` and
``budget``, two of a step's three events — are passed over by their kind, without the chain of
``isinstance`` checks (each a pydantic class's: ~0.1 µs) that finds nothing (issue 26)."""


class RunProgress:
    """A run surface: steps settled out of the workflow's steps, research rounds scored."""

    def __init__(self, board: ProgressBoard) -> None:
        self.board = board
        self._steps: set[str] = set()
        self._total = 0
        self._rounds_total: int | None = None
        self._workflow = "run"

    def __call__(self, events: list[RunEvent]) -> None:
        for event in events:
            if event.kind in _FOLDED:
                self._fold(event)

    def _fold(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            self._workflow = event.workflow
            self._total = max(self._total, len(event.nodes))
            self._rounds_total = _int(event.inputs.get("max_rounds"))
            self._show_steps("started")
        elif isinstance(event, (StepFinished, StepSkipped, StepFailed)):
            self._steps.add(event.step_id)
            self._total = max(self._total, len(self._steps))
            self._show_steps(event.step_id)
        elif isinstance(event, Domain) and event.name == ROUND_SCORED:
            self._show_round(event.payload)
        elif isinstance(event, InterruptRaised):
            self.board.pause()
        elif isinstance(event, InterruptResolved):
            self.board.resume()
        elif isinstance(event, RunFinished):
            # every step is settled at the end, those a resume found settled included
            self._steps.update(event.step_statuses)
            self._total = max(self._total, len(self._steps))
            self._show_steps(event.status.value, final=True)

    def _show_steps(self, note: str, *, final: bool = False) -> None:
        self.board.update(
            "steps",
            len(self._steps),
            self._total or None,
            note=note,
            label=f"{self._workflow} steps settled",
            final=final,
        )

    def _show_round(self, payload: dict[str, Any]) -> None:
        number = _int(payload.get("round")) or 0
        decision = str(payload.get("decision") or "")
        total = max(self._rounds_total or number, number)
        self.board.update("rounds", number, total, note=decision, label="research rounds scored")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
