"""The run store back-ends the interface tests run on, each opened as often as a test asks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.store import BaseRunStore, InMemoryRunStore, RunStore

OpenStore = Callable[[], BaseRunStore]
"""Opens another handle on one test's store (a second process's view of the same data)."""

DURABLE = ["sqlite", "postgres"]
ALL = ["sqlite", "memory", "postgres"]


def store_opener(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> OpenStore:
    """Handles on one fresh store of ``kind`` (a memory store is one handle, returned again)."""
    if kind == "sqlite":
        return lambda: RunStore(tmp_path / "runs.sqlite")
    if kind == "postgres":
        from engine.store.postgres import PostgresRunStore

        address: str = request.getfixturevalue("pg_database")
        return lambda: PostgresRunStore(address)
    memory = InMemoryRunStore()
    return lambda: memory
