"""Which run store the workbench uses, and making a PostgreSQL database ready for it.

The config's ``store:`` decides: absent, the workspace's SQLite files (``runs.sqlite`` and
its neighbours: the default); a PostgreSQL address, that database, which then holds the run
store, the provider statistics, the run queue (procrastinate's tables) and LangGraph's
checkpoints. :func:`upgrade_database` creates and migrates all four schemas there
(``workbench db upgrade``). A *location* — what ``workbench runs copy`` names on either side —
is a workspace folder or a PostgreSQL address.
"""

from __future__ import annotations

from pathlib import Path

from engine.store import BaseRunStore, RunStore
from plumbing.postgres import Database, is_database_address
from plumbing.workspace import Workspace as Folder
from tui.config import WorkbenchConfig
from tui.launch.workspace import Workspace


def open_runs(workspace: Workspace, settings: WorkbenchConfig) -> BaseRunStore:
    """The run store ``settings`` name: its PostgreSQL ``store``, else the workspace's file."""
    return open_run_store(settings.store or workspace.root)


def runs_location(workspace: Workspace, settings: WorkbenchConfig) -> str:
    """Where :func:`open_runs` reads and writes, as messages show it (never a password)."""
    return describe_location(settings.store or workspace.root)


def open_run_store(location: str | Path) -> BaseRunStore:
    """The run store at ``location``: a PostgreSQL address, or a workspace folder."""
    if isinstance(location, str) and is_database_address(location):
        from engine.store.postgres import PostgresRunStore

        return PostgresRunStore(location)
    return RunStore(Folder(Path(location).expanduser()).runs_db)


def describe_location(location: str | Path) -> str:
    """The store at ``location`` as messages show it: a database without its password, a
    workspace's run store file."""
    if isinstance(location, str) and is_database_address(location):
        return Database(location).display
    return str(Folder(Path(location).expanduser()).runs_db)


def upgrade_database(address: str) -> list[str]:
    """Create or migrate every schema the workbench keeps in the database at ``address``: the
    Alembic revisions applied, oldest first ([] when it was up to date)."""
    from engine.langgraph_checkpoint import setup_postgres_checkpoints
    from engine.store.migrations import CHAIN as RUNS
    from plumbing.migrations import upgrade
    from router.stats_migrations import CHAIN as ROUTER
    from tui.launch.queue_migrations import CHAIN as QUEUE

    database = Database(address)
    applied = upgrade(database, [RUNS, ROUTER, QUEUE])
    setup_postgres_checkpoints(database)
    return applied
