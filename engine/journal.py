"""The call journal on the run store (DESIGN §5): engine.context.Journal.

Entries are keyed by (run, step, iteration, call index). ``replay_from`` names
another run whose entries answer this run's calls when it has none of its own:
a shadow run's second engine replays the first engine's calls, and a fork can
replay its parent's. A replayed entry is copied into this run's journal, so a
run's own journal is always the complete record of what its steps were told.
"""

from __future__ import annotations

from typing import Protocol

from engine.context import JournalEntry


class JournalStore(Protocol):
    def journal_get(
        self, run_id: str, step_id: str, iteration: int, index: int
    ) -> JournalEntry | None: ...

    def journal_put(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None: ...


class StoreJournal:
    def __init__(self, store: JournalStore, replay_from: str | None = None) -> None:
        self._store = store
        self.replay_from = replay_from

    def get(self, run_id: str, step_id: str, iteration: int, index: int) -> JournalEntry | None:
        entry = self._store.journal_get(run_id, step_id, iteration, index)
        if entry is not None or self.replay_from is None or self.replay_from == run_id:
            return entry
        entry = self._store.journal_get(self.replay_from, step_id, iteration, index)
        if entry is not None:
            self._store.journal_put(run_id, step_id, iteration, index, entry)
        return entry

    def put(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        """Committed before it returns, so the step acts only on a durable answer."""
        self._store.journal_put(run_id, step_id, iteration, index, entry)
