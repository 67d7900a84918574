"""The run API's OpenAPI document, printed: ``python -m tui.server.openapi > docs/api/openapi.json``
(tests/server/test_api.py checks that the docs' copy is the one the server serves)."""

from __future__ import annotations

from typing import Any

from tui.config import WorkbenchConfig
from tui.echo import echo_json
from tui.launch.workspace import Workspace
from tui.server.app import create_app
from tui.server.auth import ServerToken
from tui.server.services import ServerServices


def document() -> dict[str, Any]:
    """The document, made without opening anything."""
    services = ServerServices(Workspace.named(None), WorkbenchConfig(), ServerToken("", False))
    return create_app(services).openapi()


if __name__ == "__main__":
    echo_json(document())
