"""The schema every test database starts with."""

from engine.langgraph_checkpoint import setup_postgres_checkpoints
from engine.store.migrations import CHAIN as RUNS
from plumbing.migrations import upgrade
from plumbing.postgres import Database
from router.stats_migrations import CHAIN as ROUTER


def upgrade_schema(address: str) -> None:
    upgrade(Database(address), [RUNS, ROUTER])
    setup_postgres_checkpoints(Database(address))
