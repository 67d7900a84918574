"""A real `workbench server` over the test's PostgreSQL database (tests/server/serving.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.serving import ServerProcess, workbench_server
from tui.launch.workspace import Workspace


@pytest.fixture
def server(tmp_path: Path, pg_database: str) -> Iterator[ServerProcess]:
    with workbench_server(tmp_path, pg_database) as started:
        yield started


@pytest.fixture
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    """An HTTP client of the server, carrying its token."""
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=60.0) as client:
        yield client


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """The workspace the test's own runs load workflows for."""
    return Workspace.at(tmp_path / "writer")
