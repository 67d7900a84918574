"""The session's template workspace (tests/faults/workspace.py), built once through the executable."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.conftest import PROVIDER_ENV_PREFIXES, PROXY_ENV
from tests.faults.workspace import Template, build_template


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Template]:
    """Built under the same hermetic environment as every test (session fixtures come first)."""
    root = tmp_path_factory.mktemp("fault-template")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_CONFIG", str(root / "no-config.yaml"))
        for name in list(os.environ):
            if name.startswith(PROVIDER_ENV_PREFIXES) or name.upper() in PROXY_ENV:
                patch.delenv(name)
        built = build_template(root)
    yield built
