"""Suite-wide settings and fixtures: hypothesis runs without deadlines (shared CI machines
vary too much for per-example timing to mean anything); a real PostgreSQL server for the
store tests (tests/pg.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from engine.store import BaseRunStore
from tests.disks import tmpfs
from tests.pg import PostgresServer, postgres_server
from tests.stores import OpenStore, store_opener

pytest_plugins = ["tests.pep_corpus"]
"""The PEP corpus's location, and a run that requires it (tests/pep_corpus.py)."""

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


PROVIDER_ENV_PREFIXES = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "AZURE_OPENAI_", "OLLAMA_")
"""Environment variables that would point the router at a real provider."""
PROXY_ENV = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
"""A machine's proxy settings: tests that need a proxy set their own."""


@pytest.fixture(autouse=True)
def _hermetic_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test reads the developer's config file or cache, or reaches a real provider.

    ``WORKBENCH_CONFIG`` points at a file that does not exist (the defaults), the user cache
    dir is one of this test session's (shared by its xdist workers: the sentence encoder's
    vectors are computed once a session, not once a test — research/sentence_memo.py; a vector
    read back may come from another batch than the test's own, which moves it by ~1e-7, so no
    test compares one exactly with a fresh encoding; the subprocesses' cel-python parser cache
    is there too), and provider keys and proxy settings are removed — subprocesses inherit the
    cleaned environment.
    """
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("WORKBENCH_CONFIG", str(base / "no-config.yaml"))
    session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    monkeypatch.setenv("XDG_CACHE_HOME", str(session / "user-cache"))
    for name in list(os.environ):
        if (
            name.startswith(PROVIDER_ENV_PREFIXES)
            or name == "GITHUB_TOKEN"
            or name.upper() in PROXY_ENV
        ):
            monkeypatch.delenv(name)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs of the test's own: room for a small store or collection, and soon full."""
    with tmpfs(tmp_path / "disk", "2m") as disk:
        yield disk


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server of this test session (tests/pg.py)."""
    from tui.launch.stores import upgrade_database

    with postgres_server(upgrade_database) as server:
        yield server


@pytest.fixture
def pg_database(pg_server: PostgresServer) -> Iterator[str]:
    """The address of a fresh database of the test's own, its schema migrated (dropped after
    the test, with any connection it left open)."""
    yield pg_server.database()
    pg_server.drop_databases()


@pytest.fixture
def pg_empty_database(pg_server: PostgresServer) -> Iterator[str]:
    """The address of a fresh database with no schema (dropped after the test)."""
    yield pg_server.empty_database()
    pg_server.drop_databases()


@pytest.fixture
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenStore]:
    """``open_store()`` opens a handle on this test's store (the test's ``store_kind``); every
    handle is closed after the test."""
    opener = store_opener(request.param, request, tmp_path)
    opened: list[BaseRunStore] = []

    def open_one() -> BaseRunStore:
        opened.append(opener())
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the processes the tests start, wherever the suite itself runs.

    A suite started in the background (``make test &``, ``nohup``, some CI runners) inherits
    SIGINT ignored, and so would every ``workbench`` it starts: Python then never turns SIGINT
    into KeyboardInterrupt, and the tests that press Ctrl-C would see it do nothing. Ignored
    signals survive ``exec``, handled ones do not, so handling it here gives each child the
    default, as in a terminal.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
