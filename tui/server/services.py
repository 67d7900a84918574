"""What the run API serves from, opened when the server starts and closed when it stops: the
PostgreSQL run store, the live event feed, the router (providers' health from the shared
statistics), the shipped workflows."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from engine.spec import WorkflowDefinition
from tui.config import WorkbenchConfig
from tui.launch.workspace import Workspace
from tui.server import MAX_STREAMS
from tui.server.auth import ServerToken
from tui.server.feed import POLL_S, EventFeed

if TYPE_CHECKING:
    from engine.store.postgres import PostgresRunStore
    from router.router import SmartModelRouter

STORE_POOL = 8
"""Connections the server's run store keeps: reads run in worker threads, several at once."""


class NeedsPostgres(ValueError):
    """The server was started without a PostgreSQL store; one line."""


def server_store_address(settings: WorkbenchConfig, config_path: str) -> str:
    """The PostgreSQL address the server serves (its config's ``store:``)."""
    if not settings.store:
        raise NeedsPostgres(
            "workbench server serves a PostgreSQL store, and the config names none: set"
            f" store: postgresql://USER@HOST/DATABASE in {config_path}, run workbench db upgrade,"
            " then start the server and its workers (docs/store-and-server.md)"
        )
    return settings.store


@dataclass
class ServerServices:
    """The server's open parts: the store opened by :meth:`open_store` before the server
    listens (a database that cannot be used stops the command with its one line), the feed
    and the router by :meth:`start` in the server's lifespan (closed by :meth:`stop` there)."""

    workspace: Workspace
    settings: WorkbenchConfig
    token: ServerToken
    poll_s: float = POLL_S
    max_streams: int = MAX_STREAMS
    store: PostgresRunStore | None = None
    feed: EventFeed | None = None
    router: SmartModelRouter | None = None

    def open_store(self) -> None:
        from engine.store.postgres import PostgresRunStore

        assert self.settings.store is not None
        self.store = PostgresRunStore(self.settings.store, pool_size=STORE_POOL)

    async def start(self) -> None:
        from router.build import build_router
        from router.local import TaskHandlerRegistry

        self.feed = EventFeed(self.runs.database)
        await self.feed.start()
        self.router = build_router(
            self.settings.effective_router(os.environ),
            stats_path=None,
            stats_database=self.settings.store,
            task_handlers=TaskHandlerRegistry(),
        )

    async def stop(self) -> None:
        """Close what :meth:`start` opened."""
        if self.router is not None:
            await self.router.aclose(flush=False)  # the server only looks
        if self.feed is not None:
            await self.feed.stop()

    def close_store(self) -> None:
        if self.store is not None:
            self.store.close()

    @property
    def runs(self) -> PostgresRunStore:
        assert self.store is not None, "the server's store is opened in its lifespan"
        return self.store

    @cached_property
    def shipped(self) -> dict[str, WorkflowDefinition]:
        """The shipped workflows that load, by name (read once)."""
        from tui.launch.workbench import Workbench

        listing = Workbench(workspace=self.workspace.root, config=self.settings).workflows()
        return {
            entry.name: entry.definition
            for entry in listing
            if entry.origin == "shipped" and entry.definition is not None
        }
