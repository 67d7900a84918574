"""Building the router from its config: HTTP providers over one shared client, statistics in
the workspace's provider-statistics file."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

import httpx

from plumbing.workspace import Workspace
from router.capabilities import StructuredCapabilities
from router.clock import Clock, SystemClock
from router.config import RouterConfig
from router.local import TaskHandlerRegistry
from router.providers.base import Provider
from router.providers.http import HttpProvider
from router.router import SmartModelRouter
from router.stats import ProviderStatsStore, StatsStore


def _client(transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    """One shared client: no retries, HTTP(S)_PROXY/NO_PROXY honoured, loopback always direct.

    The default transport is left to httpx on purpose: passing one makes httpx ignore the
    proxy variables, and its default already makes no retries.
    """
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
    if transport is not None:
        return httpx.AsyncClient(transport=transport, limits=limits, follow_redirects=False)
    direct = httpx.AsyncHTTPTransport(retries=0, limits=limits)
    return httpx.AsyncClient(
        mounts={"all://127.0.0.1": direct, "all://localhost": direct, "all://[::1]": direct},
        limits=limits,
        follow_redirects=False,
        trust_env=True,
    )


def build_router(
    config: RouterConfig,
    *,
    stats_path: Path | None,
    stats_database: str | None = None,
    task_handlers: TaskHandlerRegistry,
    clock: Clock | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    rng: random.Random | None = None,
    environ: Mapping[str, str] | None = None,
) -> SmartModelRouter:
    """The router for ``config``: HTTP providers over one shared client, stats in ``stats_path``.

    ``stats_path`` may be the SQLite file (a name with a suffix) or the workspace directory,
    existing or not (the file is then the workspace's ``provider_stats_db``); ``None`` keeps
    statistics in memory only. ``stats_database`` (a PostgreSQL address) keeps them in that
    database instead, shared by every process using it; provider capabilities stay in
    ``stats_path``'s folder.
    """
    clock = clock or SystemClock()
    client = _client(transport)
    stats: ProviderStatsStore | None = None
    path: Path | None = None
    if stats_path is not None:
        path = Path(stats_path)
        if path.is_dir() or not path.suffix:  # a workspace directory, existing or not yet created
            path = Workspace(path).provider_stats_db
    if stats_database is not None:
        from router.stats_postgres import PostgresStatsStore

        stats = PostgresStatsStore(stats_database)
    elif path is not None:
        stats = StatsStore(path)
    capabilities = StructuredCapabilities(path)
    providers: dict[str, Provider] = {
        cfg.name: HttpProvider(cfg, client, clock, environ, capabilities=capabilities)
        for cfg in config.enabled_providers()
    }
    return SmartModelRouter(
        config,
        providers=providers,
        task_handlers=task_handlers,
        clock=clock,
        stats=stats,
        rng=rng,
        client=client,
    )
