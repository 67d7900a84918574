"""The schema every test database starts with."""

from engine.store.migrations import CHAIN
from plumbing.migrations import upgrade
from plumbing.postgres import Database


def upgrade_schema(address: str) -> None:
    upgrade(Database(address), [CHAIN])
