"""The run store: runs, their events, step results, the call journal and interrupts.

``RunStore`` keeps them in their own SQLite file (DESIGN §9): WAL mode,
``synchronous=NORMAL``, one connection that every write goes through (one
writer), ``busy_timeout`` for readers in other processes.

Durability and batching. In WAL mode with ``synchronous=NORMAL`` a commit is
a write into the WAL file without an fsync: once ``COMMIT`` returns the data is
in the operating system's page cache and survives ``kill -9`` of this process
(only a power cut may lose the last commits). So the rule "durable before it is
acted on" costs one commit, not one fsync, and the batching is chosen around
the engine's units of work rather than around time:

* every event is committed before it is fanned out to subscribers, and seq
  numbers are handed out under the writer lock, so a crash can lose only
  events nobody saw and never leaves a gap in a run's seq;
* a journal entry is committed before its value is returned to the step, so
  a call that has been acted on is always replayed, never repeated;
* :meth:`RunStore.batch` groups the writes of one engine transition — a step
  result, its history row, the engine's resume state and the events that
  announce them — into one commit, so a reader or a resume sees all of them
  or none.

There is no timer-based batching: a commit that waits for a timer is a commit
a crash can lose after the engine has acted on it.

Ownership: a RUNNING run records the process that drives it, so a run whose
process was killed shows as stopped and a live one is not resumed twice
(ownership.py).

Leases: ``store.claim(run_id)`` takes a run with a fencing epoch that every later write
of that store to the run checks in its own transaction (lease.py), so a process that lost
a run can never write to it again.

The package: records (records.py), ownership (ownership.py), leases (lease.py), the
shared stamping, batching and fencing (base.py), SQLite (sqlite.py), memory (memory.py),
PostgreSQL (postgres.py, with its Alembic revisions in migrations/; imported by who uses it,
so the SQLite default loads no PostgreSQL client) and copying runs between stores
(copy.py). What reading runs needs of a store is :class:`RunReader` (reader.py): every store
is one, and so is a server's runs read over HTTP. ``InMemoryRunStore`` has the same API
without a file (benchmarks, tests that do not care about durability).
"""

from engine.store.base import BaseRunStore
from engine.store.lease import LeaseLost
from engine.store.memory import InMemoryRunStore
from engine.store.ownership import (
    OwnerStatus,
    RunFinishedMeanwhile,
    RunOwned,
    RunOwner,
    owner_status,
    this_process,
)
from engine.store.reader import RunReader
from engine.store.records import (
    InterruptClosed,
    InterruptRecord,
    OwnRow,
    RunInputs,
    RunRecord,
    RunSummary,
    StepIteration,
    StepResult,
    UnknownRun,
    UnreadableRun,
    new_run_id,
)
from engine.store.sqlite import SCHEMA_VERSION, RunStore

__all__ = [
    "SCHEMA_VERSION",
    "BaseRunStore",
    "InMemoryRunStore",
    "InterruptClosed",
    "InterruptRecord",
    "LeaseLost",
    "OwnRow",
    "OwnerStatus",
    "RunFinishedMeanwhile",
    "RunOwned",
    "RunOwner",
    "RunInputs",
    "RunReader",
    "RunRecord",
    "RunStore",
    "RunSummary",
    "StepIteration",
    "StepResult",
    "UnknownRun",
    "UnreadableRun",
    "new_run_id",
    "owner_status",
    "this_process",
]
