"""Run store event-write throughput: the SQLite file and PostgreSQL side by side (printed,
never asserted).

The same events are appended to one run on each back-end: one commit per event (the engine's
``append`` outside a batch: every event durable before it is fanned out) and 50 events per
commit (a batch, as one engine transition groups its writes). PostgreSQL is a real local
server started for the benchmark (tests/pg.py: Unix socket, ``fsync=off`` as in the tests —
so the figure is the cost of the protocol and the server's work, not of a disk flush; SQLite
runs with its own settings, WAL and ``synchronous=NORMAL``, which flush no disk per commit
either). The PostgreSQL figure includes the ``NOTIFY`` each commit sends.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from engine.events import Log
from engine.spec import StepSpec, WorkflowDefinition
from engine.store import BaseRunStore, RunStore

EVENTS = 2_000
BATCH = 50
ROUNDS = 3
WF = WorkflowDefinition(name="bench_store", steps=[StepSpec(id="a", uses="demo.echo")])


def events_per_second(store: BaseRunStore, per_commit: int) -> float:
    """The best of :data:`ROUNDS` runs of :data:`EVENTS` appends, each round a new run."""
    rates = []
    for _ in range(ROUNDS):
        run_id = store.create_run(WF, {}, "kahn", "bench")
        started = time.perf_counter()
        for first in range(0, EVENTS, per_commit):
            with store.batch():
                for index in range(first, first + per_commit):
                    store.append(Log(run_id=run_id, message=f"event {index}"))
        rates.append(EVENTS / (time.perf_counter() - started))
    return max(rates)


def measure(name: str, open_store: Callable[[], BaseRunStore]) -> dict[int, float]:
    with open_store() as store:
        figures = {per_commit: events_per_second(store, per_commit) for per_commit in (1, BATCH)}
    print(
        f"  {name:<11} {figures[1]:>9,.0f} events/s one per commit"
        f"   {figures[BATCH]:>9,.0f} events/s {BATCH} per commit",
        flush=True,
    )
    return figures


def main() -> None:
    from engine.store.postgres import PostgresRunStore
    from tests.pg import postgres_server
    from tui.launch.stores import upgrade_database

    print(f"appending {EVENTS} events to one run, best of {ROUNDS}:")
    with tempfile.TemporaryDirectory() as folder:
        sqlite = measure("SQLite", lambda: RunStore(Path(folder) / "runs.sqlite"))
    try:
        with postgres_server(upgrade_database) as server:
            postgres = measure("PostgreSQL", lambda: PostgresRunStore(server.database()))
    except BaseException as error:  # pytest's skip outside pytest: no server installed
        if type(error).__name__ not in ("Skipped", "Failed"):
            raise
        print(f"  PostgreSQL  not measured: {error}")
        return
    ratios = [postgres[n] / sqlite[n] for n in (1, BATCH)]
    print(
        f"  PostgreSQL / SQLite: {ratios[0]:.2f} one per commit, {ratios[1]:.2f} {BATCH} per"
        f" commit (geometric mean {statistics.geometric_mean(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
