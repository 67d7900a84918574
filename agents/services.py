"""What agents need from the application, provided in the run's services (engine/services.py).

The composition root provides an :class:`AgentServices` with its model port;
without one (tests with a scripted model), agents use the defaults: the
``ModelCall`` is the request, and time is the process's monotonic clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.governance import Ledger
from agents.port import DirectPort, ModelPort


@dataclass(frozen=True)
class AgentServices:
    port: ModelPort = field(default_factory=DirectPort)
    """How an agent's :class:`~agents.port.ModelCall` becomes the run's model request."""
    clock: Callable[[], float] = time.monotonic
    """A monotonic clock (seconds) for the orchestrator's time bound; tests provide their own."""
    ledgers: dict[str, Ledger] = field(default_factory=dict)
    """What each run's agents have spent, by run id: the runs these services serve (a shadow
    run's two engines share the services, each run keeps its own ledger)."""

    def ledger(self, run_id: str) -> Ledger:
        return self.ledgers.setdefault(run_id, Ledger())
