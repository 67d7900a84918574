"""How a worker runs: its concurrency and the timings of its heartbeat, takeover and polling."""

from __future__ import annotations

from pydantic import Field, model_validator

from plumbing.frozen import Frozen


class WorkerSettings(Frozen):
    """A worker's settings (``workbench worker`` options). The defaults take a killed worker's
    runs over in about ``stalled_after_s`` plus a reaper round and a poll (``make bench``)."""

    concurrency: int = Field(default=2, ge=1, le=64)
    """Runs this worker drives at once (a run waiting for a person holds none)."""
    heartbeat_s: float = Field(default=2.0, gt=0, le=60)
    """How often the worker tells the database it is alive, and checks its runs' leases."""
    stalled_after_s: float = Field(default=10.0, gt=0, le=3600)
    """A worker silent this long is stalled: the reaper queues its runs again."""
    reaper_every_s: float = Field(default=1.0, gt=0, le=60)
    """How often this worker's reaper looks for stalled workers' runs."""
    poll_s: float = Field(default=2.0, gt=0, le=60)
    """How often the queue is read even without a notification (a dropped LISTEN backstop)."""
    shutdown_s: float = Field(default=10.0, gt=0, le=600)
    """The longest a stop takes: runs are handed back, then the worker exits regardless."""

    @model_validator(mode="after")
    def _stall_longer_than_heartbeats(self) -> WorkerSettings:
        if self.stalled_after_s < 2 * self.heartbeat_s:
            raise ValueError(
                f"--stalled-after ({self.stalled_after_s:g} s) must be at least twice"
                f" --heartbeat ({self.heartbeat_s:g} s), or healthy workers look stalled"
            )
        return self
