"""Creating and migrating the PostgreSQL schema with Alembic (``workbench db upgrade``).

Each part that owns tables keeps its own chain of revisions in its own folder — the run
store's (``runs_NNNN``) and the provider statistics' (``router_NNNN``) — as Alembic
branches of one history: an upgrade brings every chain to its newest revision, in one
transaction (PostgreSQL's DDL is transactional), holding an advisory lock so two upgrades
at once take turns. SQLAlchemy serves Alembic only; the connection itself is psycopg's,
made from the address as libpq reads it (``PGPASSWORD``, sockets, service files).

A store checks its own chain when it opens (:func:`require_revision`) and refuses a
database that is behind (run ``workbench db upgrade``) or ahead (a newer workbench wrote it).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from plumbing.postgres import Database, DatabaseError, open_pool

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

_ENV = Path(__file__).with_name("alembic_env")
_LOCK_KEY = 0x776F726B62656E63  # pg_advisory_xact_lock's key for the schema ("workbenc")
VERSION_TABLE = "alembic_version"


def upgrade(database: Database, chains: Sequence[Path]) -> list[str]:
    """Bring every chain of revisions in ``chains`` (folders) to its newest; the revisions
    that were applied, oldest first ([] when the schema was up to date)."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    config = Config()
    config.set_main_option("script_location", str(_ENV))
    config.set_main_option("path_separator", "os")
    config.set_main_option("version_locations", os.pathsep.join(str(c) for c in chains))
    script = ScriptDirectory.from_config(config)
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: database.connect(), poolclass=NullPool
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        with engine.begin() as connection:
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
            before = set(MigrationContext.configure(connection).get_current_heads())
            config.attributes["connection"] = connection
            command.upgrade(config, "heads")
            after = set(MigrationContext.configure(connection).get_current_heads())
    except psycopg.Error as error:
        raise database.error("schema", error) from None
    except Exception as error:  # sqlalchemy wraps the driver's errors
        cause = getattr(error, "orig", None)
        if isinstance(cause, psycopg.Error):
            raise database.error("schema", cause) from None
        raise
    finally:
        engine.dispose()
    return sorted(_lineage(script, after) - _lineage(script, before))


def _lineage(script: Any, heads: set[str]) -> set[str]:
    """Every revision at or below ``heads``."""
    return {r.revision for head in heads for r in script.iterate_revisions(head, "base")}


def current_revisions(conn: psycopg.Connection[Any]) -> set[str]:
    """The revisions the database is at (one per chain; empty before any upgrade)."""
    found = conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()
    if found is None or found[0] is None:
        return set()
    return {row[0] for row in conn.execute(f"SELECT version_num FROM {VERSION_TABLE}")}


def open_migrated_pool(
    database: Database, what: str, revision: str, *, max_size: int
) -> ConnectionPool[Any]:
    """A pool on ``database`` (plumbing/postgres.py) once its schema is found at ``revision``
    (:func:`require_revision`); nothing is left open when it is not."""
    pool = open_pool(database, what, max_size=max_size)
    try:
        with pool.connection() as conn:
            require_revision(database, conn, what, revision)
    except BaseException:
        pool.close()
        raise
    return pool


def require_revision(
    database: Database, conn: psycopg.Connection[Any], what: str, revision: str
) -> None:
    """Refuse a database whose chain of ``revision`` (``<chain>_<number>``) is not at it."""
    chain, _, number = revision.rpartition("_")
    found = [r for r in current_revisions(conn) if r.rpartition("_")[0] == chain]
    if found == [revision]:
        return
    if found and int(found[0].rpartition("_")[2]) > int(number):
        raise DatabaseError(
            f"{database.display}: the {what} was written by a newer Research Workbench "
            f"(schema {found[0]}, this one knows up to {revision}) — upgrade the workbench"
        )
    have = found[0] if found else "none"
    raise DatabaseError(
        f"{database.display}: the {what} schema is not ready (at {have}, needs {revision})"
        " — run workbench db upgrade with this store"
    )
