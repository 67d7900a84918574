"""Which run store a setting names, and making a PostgreSQL database ready for the workbench.

A store is a workspace folder (its ``runs.sqlite``: the default) or a PostgreSQL address
(``postgresql://…``, the config's ``store:``). With PostgreSQL, the run store, the provider
statistics and LangGraph's checkpoints share the database; :func:`upgrade_database` creates
and migrates all three schemas (``workbench db upgrade``).
"""

from __future__ import annotations

from pathlib import Path

from engine.store import BaseRunStore, RunStore
from plumbing.postgres import Database, is_database_address
from tui.launch.workspace import RUNS_FILE


def open_run_store(location: str | Path) -> BaseRunStore:
    """The run store at ``location``: a PostgreSQL address, or a workspace folder."""
    if isinstance(location, str) and is_database_address(location):
        from engine.store.postgres import PostgresRunStore

        return PostgresRunStore(location)
    return RunStore(Path(location).expanduser() / RUNS_FILE)


def describe_location(location: str | Path) -> str:
    """``location`` as messages show it: a database without its password, a folder's path."""
    if isinstance(location, str) and is_database_address(location):
        return Database(location).display
    return str(Path(location).expanduser())


def upgrade_database(address: str) -> list[str]:
    """Create or migrate every schema the workbench keeps in the database at ``address``: the
    Alembic revisions applied, oldest first ([] when it was up to date)."""
    from engine.langgraph_checkpoint import setup_postgres_checkpoints
    from engine.store.migrations import CHAIN as RUNS
    from plumbing.migrations import upgrade
    from router.stats_migrations import CHAIN as ROUTER

    database = Database(address)
    applied = upgrade(database, [RUNS, ROUTER])
    setup_postgres_checkpoints(database)
    return applied
