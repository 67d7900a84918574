"""Provider statistics and breaker state in PostgreSQL: one database shared by every worker.

The same meanings as the SQLite file (router/stats.py): totals are added as increments
(``INSERT … ON CONFLICT DO UPDATE SET requests = requests + …``), which PostgreSQL applies
atomically per row, so any number of processes writing at once add up; recent calls are
pruned to the newest ``keep_calls`` per provider; breaker rows are last-writer-wins;
cooldowns are stored as offsets with the wall time of the save. The schema is created by
``workbench db upgrade`` (router/stats_migrations) and checked when the store opens.
"""

from __future__ import annotations

from dataclasses import astuple
from typing import Any

import psycopg

from plumbing.migrations import open_migrated_pool
from plumbing.postgres import Database
from router.stats import (
    PROBE_CLAIM,
    PROBE_OUTCOME,
    BreakerRecord,
    CallRecord,
    ProbeClaim,
    ProbeOutcome,
    ProviderTotals,
    StoredProvider,
    call_totals,
    probe_claim,
    probe_release,
)

SCHEMA_REVISION = "router_0002"
"""The newest revision of router/stats_migrations: the schema this code reads and writes."""
WHAT = "provider statistics"
_BREAKER_COLUMNS = (
    "provider, state, cooldown_remaining_s, consecutive_trips, open_reason, last_error,"
    " last_error_status, misconfigured, misconfigured_reason, changed_wall, saved_wall"
)
_TOTALS = (
    "requests",
    "successes",
    "failures",
    "rate_limited",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "fallbacks",
)


class PostgresStatsStore:
    """A :class:`~router.stats.ProviderStatsStore` in a PostgreSQL database."""

    failures: tuple[type[Exception], ...] = (psycopg.Error,)

    def __init__(self, database: Database | str, *, keep_calls: int = 200) -> None:
        self.database = database if isinstance(database, Database) else Database(database)
        self.keep_calls = keep_calls
        self._pool = open_migrated_pool(self.database, WHAT, SCHEMA_REVISION, max_size=2)

    @property
    def where(self) -> str:
        return self.database.display

    def write(self, calls: list[CallRecord], breakers: list[BreakerRecord]) -> None:
        if not calls and not breakers:
            return
        totals, last_wall = call_totals(calls)
        added = ", ".join(f"{name} = provider_totals.{name} + EXCLUDED.{name}" for name in _TOTALS)
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO provider_totals (provider, {', '.join(_TOTALS)}, updated_wall)"
                f" VALUES (%s, {', '.join(['%s'] * len(_TOTALS))}, %s)"
                f" ON CONFLICT (provider) DO UPDATE SET {added},"
                " updated_wall = GREATEST(provider_totals.updated_wall, EXCLUDED.updated_wall)",
                [(provider, *row, last_wall[provider]) for provider, row in sorted(totals.items())],
            )
            cur.executemany(
                "INSERT INTO provider_calls (provider, ok, latency_s, error_class, wall)"
                " VALUES (%s, %s, %s, %s, %s)",
                [(c.provider, c.ok, c.latency_s, c.error_class, c.wall) for c in calls],
            )
            cur.executemany(
                "DELETE FROM provider_calls WHERE provider = %s AND id <= ("
                " SELECT id FROM provider_calls WHERE provider = %s"
                " ORDER BY id DESC LIMIT 1 OFFSET %s)",
                [(provider, provider, self.keep_calls) for provider in sorted(totals)],
            )
            cur.executemany(
                f"INSERT INTO provider_breaker ({_BREAKER_COLUMNS})"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (provider) DO UPDATE SET state = EXCLUDED.state,"
                " cooldown_remaining_s = EXCLUDED.cooldown_remaining_s,"
                " consecutive_trips = EXCLUDED.consecutive_trips,"
                " open_reason = EXCLUDED.open_reason, last_error = EXCLUDED.last_error,"
                " last_error_status = EXCLUDED.last_error_status,"
                " misconfigured = EXCLUDED.misconfigured,"
                " misconfigured_reason = EXCLUDED.misconfigured_reason,"
                " changed_wall = EXCLUDED.changed_wall, saved_wall = EXCLUDED.saved_wall",
                [astuple(b) for b in sorted(breakers, key=lambda b: b.provider)],
            )

    def load(self, recent: int = 100) -> dict[str, StoredProvider]:
        result: dict[str, StoredProvider] = {}
        with self._pool.connection() as conn:
            for provider, *values in conn.execute(
                f"SELECT provider, {', '.join(_TOTALS)} FROM provider_totals"
            ):
                result.setdefault(provider, StoredProvider()).totals = ProviderTotals(*values)
            for provider, ok, latency in conn.execute(
                "SELECT provider, ok, latency_s FROM ("
                " SELECT provider, ok, latency_s, id,"
                " row_number() OVER (PARTITION BY provider ORDER BY id DESC) AS newest"
                " FROM provider_calls) recent WHERE newest <= %s ORDER BY provider, id",
                (recent,),
            ):
                result.setdefault(provider, StoredProvider()).recent.append((ok, latency))
            for record in self._breakers(conn):
                result.setdefault(record.provider, StoredProvider()).breaker = record
        return result

    def load_breakers(self) -> list[BreakerRecord]:
        with self._pool.connection() as conn:
            return self._breakers(conn)

    def claim_probe(
        self, provider: str, holder: str, now_wall: float, until_wall: float, seen_wall: float
    ) -> ProbeClaim:
        """The conditional UPDATE of router/stats.py: under READ COMMITTED a second claim at once
        waits for the first's commit, then re-checks its WHERE on the row the first wrote."""
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute(
                "INSERT INTO provider_probe (provider) VALUES (%s) ON CONFLICT DO NOTHING",
                (provider,),
            )
            cur.execute(PROBE_CLAIM, (holder, until_wall, provider, now_wall, seen_wall))
            granted = cur.rowcount == 1
            row = cur.execute(PROBE_OUTCOME, (provider,)).fetchone()
        return probe_claim(granted, row, seen_wall)

    def release_probe(self, provider: str, holder: str, outcome: ProbeOutcome | None) -> None:
        statement, params = probe_release(provider, holder, outcome)
        with self._pool.connection() as conn:
            conn.execute(statement, params)

    @staticmethod
    def _breakers(conn: psycopg.Connection[Any]) -> list[BreakerRecord]:
        rows = conn.execute(f"SELECT {_BREAKER_COLUMNS} FROM provider_breaker").fetchall()
        return [BreakerRecord(*row) for row in rows]

    def close(self) -> None:
        self._pool.close()
