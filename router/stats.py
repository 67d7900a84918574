"""Provider statistics and breaker state persisted in SQLite, safe with several processes.

The file is opened by the rules of every workspace file (plumbing/sqlite_files.py: WAL,
``synchronous=NORMAL``, the busy timeout).

Totals are written as increments (``requests = requests + ?``) inside
``BEGIN IMMEDIATE`` transactions, so processes writing at once add up instead
of overwriting each other. Recent calls go to an append-only table pruned to
the last ``keep_calls`` per provider. Breaker state is last-writer-wins per
provider. Monotonic values cannot be compared across processes or reboots, so
a cooldown is stored as an offset — the seconds that remained when it was
saved — with the wall time of the save; on load the elapsed wall time is
subtracted (never added: a wall clock stepped backwards cannot lengthen it).

Writes are batched by :class:`StatsRecorder` off the request path; the router
flushes it from a worker thread about once a second and on close.

The router reads and writes any :class:`ProviderStatsStore`: this SQLite file
(:class:`StatsStore`, the default) or a PostgreSQL database shared by every worker
(router/stats_postgres.py), with the same meanings.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from plumbing.sqlite_files import BUSY_TIMEOUT_S, connect, retry_while_locked, use_wal
from router.breaker import CircuitBreaker
from router.clock import Clock
from router.errors import StatsFileError
from router.models import BreakerState

SCHEMA_VERSION = 3

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS provider_totals (
    provider TEXT PRIMARY KEY,
    requests INTEGER NOT NULL DEFAULT 0,
    successes INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    rate_limited INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    updated_wall REAL NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    fallbacks INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS provider_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    provider TEXT NOT NULL,
    ok INTEGER NOT NULL,
    latency_s REAL,
    error_class TEXT,
    wall REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS provider_calls_by_provider ON provider_calls (provider, id);
CREATE TABLE IF NOT EXISTS provider_breaker (
    provider TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    cooldown_remaining_s REAL NOT NULL,
    consecutive_trips INTEGER NOT NULL,
    open_reason TEXT,
    last_error TEXT,
    last_error_status INTEGER,
    misconfigured INTEGER NOT NULL DEFAULT 0,
    misconfigured_reason TEXT,
    changed_wall REAL,
    saved_wall REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS provider_probe (
    provider TEXT PRIMARY KEY,
    holder TEXT,
    expires_wall REAL NOT NULL DEFAULT 0,
    settled_wall REAL NOT NULL DEFAULT 0,
    state TEXT,
    cooldown_remaining_s REAL NOT NULL DEFAULT 0,
    consecutive_trips INTEGER NOT NULL DEFAULT 0,
    open_reason TEXT,
    saved_wall REAL NOT NULL DEFAULT 0
);
"""
_ADDED_COLUMNS = (
    ("cost_usd", "REAL NOT NULL DEFAULT 0"),
    ("fallbacks", "INTEGER NOT NULL DEFAULT 0"),
)


@dataclass(frozen=True, slots=True)
class CallRecord:
    provider: str
    ok: bool
    latency_s: float | None
    error_class: str | None
    input_tokens: int
    output_tokens: int
    wall: float
    cost_usd: float = 0.0
    fallback: bool = False  # the built-in provider answered in place of a remote one


@dataclass(frozen=True, slots=True)
class BreakerRecord:
    provider: str
    state: str
    cooldown_remaining_s: float
    consecutive_trips: int
    open_reason: str | None
    last_error: str | None
    last_error_status: int | None
    misconfigured: bool
    misconfigured_reason: str | None
    changed_wall: float | None
    saved_wall: float


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """How a HALF_OPEN probe ended, as the process that sent it shared it: the breaker's state
    after it (OPEN or CLOSED), its cooldown then, and when it changed (``settled_wall``)."""

    state: str
    cooldown_remaining_s: float
    consecutive_trips: int
    open_reason: str | None
    settled_wall: float
    saved_wall: float


@dataclass(frozen=True, slots=True)
class ProbeClaim:
    """The answer to claiming a provider's shared probe lease: ``granted``, or refused — with
    the outcome of a probe settled since the claimant's breaker went HALF_OPEN, if there was one."""

    granted: bool
    outcome: ProbeOutcome | None = None


@dataclass(frozen=True, slots=True)
class ProviderTotals:
    requests: int = 0
    successes: int = 0
    failures: int = 0
    rate_limited: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    fallbacks: int = 0


@dataclass(slots=True)
class StoredProvider:
    totals: ProviderTotals = field(default_factory=ProviderTotals)
    recent: list[tuple[bool, float | None]] = field(default_factory=list)  # oldest first
    breaker: BreakerRecord | None = None

    def cooldown_remaining(self, now_wall: float) -> float:
        """The stored cooldown minus the wall time elapsed since it was saved (elapsed clamped at 0)."""
        if self.breaker is None:
            return 0.0
        elapsed = max(0.0, now_wall - self.breaker.saved_wall)
        return max(0.0, self.breaker.cooldown_remaining_s - elapsed)


def call_totals(calls: list[CallRecord]) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Per provider, what ``calls`` add to its totals — requests, successes, failures,
    rate-limited, input tokens, output tokens, cost, fallbacks — and its latest call's wall time."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0.0, 0])
    last_wall: dict[str, float] = {}
    for call in calls:
        row = totals[call.provider]
        row[0] += 1
        row[1] += call.ok
        row[2] += not call.ok
        row[3] += call.error_class in ("rate_limit", "quota")
        row[4] += call.input_tokens
        row[5] += call.output_tokens
        row[6] += call.cost_usd
        row[7] += call.fallback
        last_wall[call.provider] = max(last_wall.get(call.provider, 0.0), call.wall)
    return dict(totals), last_wall


class ProviderStatsStore(Protocol):
    """Where provider statistics and breaker state are kept, shared by every process using it."""

    @property
    def where(self) -> str:
        """The store as messages name it (a file; a database without its password)."""

    @property
    def failures(self) -> tuple[type[Exception], ...]:
        """The errors that mean the store could not be read or written just now."""

    def write(self, calls: list[CallRecord], breakers: list[BreakerRecord]) -> None:
        """Add a batch of calls (totals as increments, so writers add up) and replace breaker
        rows, in one transaction; recent calls are pruned to the newest ``keep_calls``."""

    def load(self, recent: int = 100) -> dict[str, StoredProvider]:
        """Everything stored, per provider: totals, the last ``recent`` calls (oldest first),
        breaker row."""

    def load_breakers(self) -> list[BreakerRecord]:
        """Only the breaker rows: what a running router polls to see other processes' trips."""

    def claim_probe(
        self, provider: str, holder: str, now_wall: float, until_wall: float, seen_wall: float
    ) -> ProbeClaim:
        """Take ``provider``'s shared half-open probe lease for ``holder`` until ``until_wall``,
        atomically: granted only when no unexpired lease is held and no probe was settled at or
        after ``seen_wall`` (when the claimant's breaker last changed) — that outcome is
        returned instead, for the claimant to adopt."""

    def release_probe(self, provider: str, holder: str, outcome: ProbeOutcome | None) -> None:
        """Give back ``holder``'s lease, sharing the probe's ``outcome`` (``None``: unjudged)."""

    def close(self) -> None: ...


class StatsStore:
    """One SQLite file; one connection per store, guarded by a lock so worker threads can flush."""

    failures: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(
        self, path: Path, *, keep_calls: int = 200, busy_timeout_s: float = BUSY_TIMEOUT_S
    ) -> None:
        self.path = Path(path)
        self.keep_calls = keep_calls
        self._lock = threading.Lock()
        try:  # an OSError (its folder cannot be made) is the caller's to explain by its number
            self._conn = connect(self.path, isolation_level=None, busy_timeout_s=busy_timeout_s)
        except sqlite3.Error as exc:
            raise StatsFileError(self.path, exc) from None
        try:
            use_wal(self._conn, busy_timeout_s)
            retry_while_locked(self._create_schema, busy_timeout_s)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StatsFileError(self.path, exc) from None

    @property
    def where(self) -> str:
        return str(self.path)

    # --- setup ----------------------------------------------------------------

    def _create_schema(self) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in (part.strip() for part in _SCHEMA.split(";")):
                    if statement:
                        self._conn.execute(statement)
                columns = {
                    row[1] for row in self._conn.execute("PRAGMA table_info(provider_totals)")
                }
                for column, decl in _ADDED_COLUMNS:  # files written by schema version 1
                    if column not in columns:
                        self._conn.execute(
                            f"ALTER TABLE provider_totals ADD COLUMN {column} {decl}"
                        )
                self._conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    # --- writing ------------------------------------------------------------------

    def write(self, calls: list[CallRecord], breakers: list[BreakerRecord]) -> None:
        """Add a batch of calls and replace breaker rows, in one transaction."""
        if not calls and not breakers:
            return
        totals, last_wall = call_totals(calls)
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for provider, row in totals.items():
                    cur.execute(
                        """INSERT INTO provider_totals
                               (provider, requests, successes, failures, rate_limited, input_tokens,
                                output_tokens, cost_usd, fallbacks, updated_wall)
                           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                           ON CONFLICT (provider) DO UPDATE SET
                               requests = requests + excluded.requests,
                               successes = successes + excluded.successes,
                               failures = failures + excluded.failures,
                               rate_limited = rate_limited + excluded.rate_limited,
                               input_tokens = input_tokens + excluded.input_tokens,
                               output_tokens = output_tokens + excluded.output_tokens,
                               cost_usd = cost_usd + excluded.cost_usd,
                               fallbacks = fallbacks + excluded.fallbacks,
                               updated_wall = max(updated_wall, excluded.updated_wall)""",
                        (provider, *row, last_wall[provider]),
                    )
                cur.executemany(
                    "INSERT INTO provider_calls (provider, ok, latency_s, error_class, wall) VALUES (?, ?, ?, ?, ?)",
                    [(c.provider, int(c.ok), c.latency_s, c.error_class, c.wall) for c in calls],
                )
                for provider in totals:
                    cur.execute(
                        """DELETE FROM provider_calls WHERE provider = ? AND id <= (
                               SELECT id FROM provider_calls WHERE provider = ?
                               ORDER BY id DESC LIMIT 1 OFFSET ?)""",
                        (provider, provider, self.keep_calls),
                    )
                cur.executemany(
                    """INSERT OR REPLACE INTO provider_breaker
                           (provider, state, cooldown_remaining_s, consecutive_trips, open_reason, last_error,
                            last_error_status, misconfigured, misconfigured_reason, changed_wall, saved_wall)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    [
                        (
                            b.provider,
                            b.state,
                            b.cooldown_remaining_s,
                            b.consecutive_trips,
                            b.open_reason,
                            b.last_error,
                            b.last_error_status,
                            int(b.misconfigured),
                            b.misconfigured_reason,
                            b.changed_wall,
                            b.saved_wall,
                        )
                        for b in breakers
                    ],
                )
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    # --- reading ------------------------------------------------------------------------

    def load(self, recent: int = 100) -> dict[str, StoredProvider]:
        """Everything stored, per provider: totals, the last ``recent`` calls (oldest first), breaker row."""
        result: dict[str, StoredProvider] = defaultdict(StoredProvider)
        with self._lock:
            for row in self._conn.execute(
                "SELECT provider, requests, successes, failures, rate_limited, input_tokens, "
                "output_tokens, cost_usd, fallbacks FROM provider_totals"
            ):
                result[row[0]].totals = ProviderTotals(*row[1:])
            for (provider,) in self._conn.execute("SELECT DISTINCT provider FROM provider_calls"):
                rows = self._conn.execute(
                    "SELECT ok, latency_s FROM provider_calls WHERE provider = ? ORDER BY id DESC LIMIT ?",
                    (provider, recent),
                ).fetchall()
                result[provider].recent = [(bool(ok), latency) for ok, latency in reversed(rows)]
            for record in self._breaker_rows():
                result[record.provider].breaker = record
        return dict(result)

    def load_breakers(self) -> list[BreakerRecord]:
        """Only the breaker rows: what a running router polls to see other processes' trips."""
        with self._lock:
            return self._breaker_rows()

    def _breaker_rows(self) -> list[BreakerRecord]:
        rows = self._conn.execute(
            "SELECT provider, state, cooldown_remaining_s, consecutive_trips, open_reason, last_error, "
            "last_error_status, misconfigured, misconfigured_reason, changed_wall, saved_wall "
            "FROM provider_breaker"
        ).fetchall()
        return [
            BreakerRecord(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                row[6],
                bool(row[7]),
                row[8],
                row[9],
                row[10],
            )
            for row in rows
        ]

    # --- the shared probe lease ------------------------------------------------------

    def claim_probe(
        self, provider: str, holder: str, now_wall: float, until_wall: float, seen_wall: float
    ) -> ProbeClaim:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                cur.execute(
                    "INSERT OR IGNORE INTO provider_probe (provider) VALUES (?)", (provider,)
                )
                cur.execute(
                    PROBE_CLAIM.replace("%s", "?"),
                    (holder, until_wall, provider, now_wall, seen_wall),
                )
                granted = cur.rowcount == 1
                row = cur.execute(PROBE_OUTCOME.replace("%s", "?"), (provider,)).fetchone()
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return probe_claim(granted, row, seen_wall)

    def release_probe(self, provider: str, holder: str, outcome: ProbeOutcome | None) -> None:
        statement, params = probe_release(provider, holder, outcome)
        with self._lock:
            self._conn.execute(statement.replace("%s", "?"), params)

    def integrity_ok(self) -> bool:
        with self._lock:
            result: str = self._conn.execute("PRAGMA integrity_check").fetchone()[0]
            return result == "ok"

    def close(self) -> None:
        with self._lock:
            self._conn.close()


PROBE_CLAIM = (
    "UPDATE provider_probe SET holder = %s, expires_wall = %s WHERE provider = %s"
    " AND (holder IS NULL OR expires_wall <= %s) AND settled_wall < %s"
)
"""The claim itself: one conditional UPDATE, so of any number of processes at once one wins."""
PROBE_OUTCOME = (
    "SELECT state, cooldown_remaining_s, consecutive_trips, open_reason, settled_wall,"
    " saved_wall FROM provider_probe WHERE provider = %s"
)


def probe_claim(granted: bool, row: tuple[Any, ...] | None, seen_wall: float) -> ProbeClaim:
    """The claim's answer from its UPDATE's row count and the probe row read after it."""
    if granted or row is None or row[0] is None or row[4] < seen_wall:
        return ProbeClaim(granted)
    return ProbeClaim(False, ProbeOutcome(*row))


def probe_release(
    provider: str, holder: str, outcome: ProbeOutcome | None
) -> tuple[str, tuple[Any, ...]]:
    """The UPDATE giving back ``holder``'s lease (and sharing ``outcome``) with its parameters."""
    where = " WHERE provider = %s AND holder = %s"
    if outcome is None:
        return "UPDATE provider_probe SET holder = NULL, expires_wall = 0" + where, (
            provider,
            holder,
        )
    return (
        "UPDATE provider_probe SET holder = NULL, expires_wall = 0, state = %s,"
        " cooldown_remaining_s = %s, consecutive_trips = %s, open_reason = %s,"
        " settled_wall = %s, saved_wall = %s" + where,
        (*astuple(outcome), provider, holder),
    )


class StatsRecorder:
    """Buffers call records and dirty breaker rows between flushes; flushing is thread-safe."""

    def __init__(self, store: ProviderStatsStore, *, max_buffer: int = 10_000) -> None:
        self.store = store
        self._calls: list[CallRecord] = []
        self._breakers: dict[str, BreakerRecord] = {}
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._max_buffer = max_buffer
        self._warned = False

    @property
    def pending(self) -> int:
        return len(self._calls) + len(self._breakers)

    def add_call(self, record: CallRecord) -> None:
        with self._lock:
            if len(self._calls) >= self._max_buffer:
                del self._calls[: len(self._calls) // 2]  # the store is unwritable: keep the newest
            self._calls.append(record)

    def set_breaker(self, record: BreakerRecord) -> None:
        with self._lock:
            self._breakers[record.provider] = record

    def flush(self) -> None:
        with self._flush_lock:
            with self._lock:
                calls, self._calls = self._calls, []
                breakers, self._breakers = list(self._breakers.values()), {}
            try:
                self.store.write(calls, breakers)
            except self.store.failures as exc:
                if not self._warned:
                    log.warning(
                        "provider stats could not be written to %s (%s); retrying on the next flush",
                        self.store.where,
                        type(exc).__name__,
                    )
                    self._warned = True
                with self._lock:
                    self._calls[:0] = calls
                    for record in breakers:
                        self._breakers.setdefault(record.provider, record)


class SharedStats:
    """The router's side of the stats file: batched writes off the request path, and the trips
    other processes sharing the file wrote, adopted at every poll.

    Writes happen in a worker thread at most every ``flush_s`` (a trip at once: every process
    sharing the file adopts it at its next poll, every ``poll_s``). ``breakers`` are this
    process's breakers by provider name.
    """

    def __init__(
        self,
        store: ProviderStatsStore,
        clock: Clock,
        breakers: Mapping[str, CircuitBreaker],
        *,
        flush_s: float,
        poll_s: float,
    ) -> None:
        self.store = store
        self.recorder = StatsRecorder(store)
        self.clock = clock
        self._breakers = breakers
        self._flush_s = flush_s
        self._poll_s = poll_s
        self._last_flush = time.monotonic()
        self._flush_tasks: set[asyncio.Task[None]] = set()
        self._sync_task: asyncio.Task[None] | None = None
        self._sync_warned = False
        self.syncs = 0  # polls of the file done (tests wait on it)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Poll the file on ``loop`` until :meth:`stop`."""
        self._sync_task = loop.create_task(self._sync_loop())

    async def stop(self) -> None:
        if self._sync_task is not None:
            self._sync_task.cancel()
            await asyncio.gather(self._sync_task, return_exceptions=True)

    async def sync_shared_state(self) -> None:
        """Write this process's pending stats, then adopt trips other processes wrote to the file."""
        await self.flush()
        try:
            rows = await asyncio.to_thread(self.store.load_breakers)
        except self.store.failures as exc:
            if not self._sync_warned:
                self._sync_warned = True
                log.warning("provider stats could not be read (%s)", type(exc).__name__)
            return
        now_wall = self.clock.wall()
        for row in rows:
            breaker = self._breakers.get(row.provider)
            if breaker is None or row.state != BreakerState.OPEN.value or row.changed_wall is None:
                continue
            remaining = row.cooldown_remaining_s - max(0.0, now_wall - row.saved_wall)
            breaker.adopt_trip(remaining, row.consecutive_trips, row.open_reason, row.changed_wall)
        self.syncs += 1

    async def _sync_loop(self) -> None:
        while True:
            await self.clock.sleep(self._poll_s)
            await self.sync_shared_state()

    async def flush(self) -> None:
        """Write buffered calls and changed breaker rows now (rows this process never changed are left alone,
        so a process that merely looked does not overwrite another's breaker state)."""
        await asyncio.to_thread(self.recorder.flush)
        self._last_flush = time.monotonic()

    def track(self, task: asyncio.Task[None]) -> None:
        """Count ``task`` (a write started elsewhere, the shared probe's release) among the
        writes :meth:`wait_for_writes` waits for."""
        self._flush_tasks.add(task)
        task.add_done_callback(self._flush_tasks.discard)

    async def wait_for_writes(self) -> None:
        """Wait for the stats writes already started (a trip's is started when it happens)."""
        while self._flush_tasks:
            await asyncio.gather(*self._flush_tasks, return_exceptions=True)

    def maybe_flush(self, *, urgent: bool) -> None:
        """Write pending stats in a worker thread: at most every ``flush_s``, or at once when ``urgent``.

        Concurrent flushes are safe, the recorder serialises them.
        """
        if self.recorder.pending == 0:
            return
        if not urgent and (
            self._flush_tasks or time.monotonic() - self._last_flush < self._flush_s
        ):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop yet: the next poll or ``aclose`` writes it
            return
        self._last_flush = time.monotonic()
        self.track(loop.create_task(asyncio.to_thread(self.recorder.flush)))
