"""The runs this app drives, by id, each with its status as its own events say.

A run screen following a live run reports the status its fold reached (WAITING while a prompt is
open); Home and the run history read it here and redraw on :attr:`LiveRuns.changed`, so a run
that starts waiting shows WAITING on every screen at once — the store says RUNNING until the
engine stops. A stored run nobody here drives is read from the store: RUNNING with a prompt
pending is WAITING too.
"""

from __future__ import annotations

from textual.dom import DOMNode
from textual.signal import Signal

from engine.states import RunStatus
from engine.store import RunReader, RunSummary


class LiveRuns:
    """Each live run's status by run id; ``changed`` carries the id of a run whose status moved."""

    def __init__(self, owner: DOMNode) -> None:
        self._status: dict[str, str] = {}
        self.changed: Signal[str] = Signal(owner, "live-run-changed")

    def report(self, run_id: str, status: str) -> None:
        """A live run's status as its events say (the run screen's fold)."""
        if run_id and self._status.get(run_id) != status:
            self._status[run_id] = status
            self.changed.publish(run_id)

    def ended(self, run_id: str, status: str) -> None:
        """The run is no longer driven here: its last status goes out, then the store's word."""
        self.report(run_id, status)
        self._status.pop(run_id, None)

    def status(self, run_id: str) -> str | None:
        """The live run's status; None for a run this app does not drive."""
        return self._status.get(run_id)

    def shown_status(self, run: RunSummary, store: RunReader) -> str:
        """What a runs table shows for ``run``: the live status, else the store's, where RUNNING
        with a pending prompt (another process waits at a terminal prompt) is WAITING."""
        live = self.status(run.run_id)
        if live is not None:
            return live
        if run.status is RunStatus.RUNNING and store.pending_interrupts(run.run_id):
            return RunStatus.WAITING.value
        return run.status.value
