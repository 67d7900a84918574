"""What reading runs needs of a run store: the part of its API that every surface showing runs
uses (the app, ``workbench runs list|show|export``, planning a fork).

Every :class:`~engine.store.BaseRunStore` is one. So is a store read over HTTP from a
``workbench server`` (tui/client/remote_store.py), which is how the app and the CLI show a
server's runs exactly as local ones: they read nothing but these methods.
``record_answer`` is here too: answering a stored prompt is how a reader takes part in a run.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from engine.context import InterruptAnswer, JournalEntry
from engine.events import RunEvent
from engine.store.records import (
    InterruptRecord,
    RunInputs,
    RunRecord,
    RunSummary,
    StepResult,
)

_Reader = TypeVar("_Reader", bound="RunReader")


class RunReader(Protocol):
    """Runs, their events, step results, journal and prompts, read; a prompt answered."""

    def list_runs(self, limit: int = 50) -> list[RunSummary]: ...

    def list_runs_with_inputs(self, limit: int = 50) -> list[RunInputs]: ...

    def get_run(self, run_id: str) -> RunRecord: ...

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]: ...

    def step_results(self, run_id: str) -> dict[str, StepResult]: ...

    def journal_entries(
        self, run_id: str, step_id: str, iteration: int
    ) -> list[tuple[int, JournalEntry]]: ...

    def interrupts(self, run_id: str) -> list[InterruptRecord]: ...

    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None: ...

    def pending_interrupts(self, run_id: str) -> list[InterruptRecord]: ...

    def record_answer(self, interrupt_id: str, answer: InterruptAnswer) -> InterruptRecord: ...

    def close(self) -> None: ...

    def __enter__(self: _Reader) -> _Reader: ...

    def __exit__(self, *exc: object) -> None: ...
