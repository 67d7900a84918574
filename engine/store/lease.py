"""Run leases with a fencing epoch: who may write a run, checked in the writing transaction.

``store.claim(run_id)`` takes a run's lease: it increments the run's epoch and returns it,
and the store handle then holds that epoch for the run. Every later write of that handle
to the run — an event, a step result, a journal entry, a status — reads the run's current
epoch in the transaction that writes (PostgreSQL: ``FOR SHARE``, so a claim by another
process waits for that transaction to end; SQLite: under the writer lock). A handle whose
epoch is no longer current gets :class:`LeaseLost` and its transaction commits nothing: a
worker that lost its run (killed, frozen, cut off) can never write to it again, however late
it wakes. A handle that never claimed a run writes it unchecked (the embedded default, an
answer given by a person).
"""

from __future__ import annotations

from engine.store.ownership import RunOwned


class LeaseLost(RunOwned):
    """This store's lease on the run was taken over; nothing of the failed write was kept."""

    def __init__(self, run_id: str, held: int, current: int | None) -> None:
        now = f"epoch {current} holds it now" if current is not None else "its lease is gone"
        super().__init__(
            f"run {run_id} was taken over (this process held lease epoch {held}; {now}) —"
            " nothing more is written for it here",
            run_id,
        )
        self.held = held
        self.current = current
