"""The call journal on the run store (DESIGN §5): engine.context.Journal.

Entries are keyed by (run, step, iteration, call index). ``replay_from`` names
another run whose entries answer this run's calls when it has none of its own:
a shadow run's second engine replays the first engine's calls, and a fork can
replay its parent's. A replayed entry is copied into this run's journal, so a
run's own journal is always the complete record of what its steps were told.

A borrowed entry is taken as about the run that borrows it: the lending run's id
inside it becomes this run's (engine/rebase.py) — a model that was shown the path
of the note its run saved answers with that path, and the borrowing run saved its
note in its own folder. Entries of kind :data:`RUN_EFFECT` are never lent: they
record an effect on the calling run's own things, which a run makes itself.
"""

from __future__ import annotations

from typing import Protocol

from engine.context import JournalEntry
from engine.rebase import rebase

RUN_EFFECT = "run_effect"
"""The kind of a journaled call whose effect is on the calling run's own things (a file in its
folder). Within its run it replays like any call; a run replaying another's journal is not
lent it, so it makes the call itself and has its own effect (shadow mode's second engine
writes the note into its own run's folder)."""


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
        lent = self._store.journal_get(self.replay_from, step_id, iteration, index)
        if lent is None or lent.kind == RUN_EFFECT:
            return None
        entry = JournalEntry(kind=lent.kind, payload=rebase(lent.payload, self.replay_from, run_id))
        self._store.journal_put(run_id, step_id, iteration, index, entry)
        return entry

    def put(
        self, run_id: str, step_id: str, iteration: int, index: int, entry: JournalEntry
    ) -> None:
        """Committed before it returns, so the step acts only on a durable answer."""
        self._store.journal_put(run_id, step_id, iteration, index, entry)
