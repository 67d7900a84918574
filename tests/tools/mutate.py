"""Mutation testing of the engine: ``nice python -m tests.tools.mutate run --max-children 1``,
then ``python -m tests.tools.mutate results``.

``[tool.mutmut]`` in pyproject.toml is the router's setup; mutmut reads only that
table, so this runs mutmut with the engine's settings instead (the routing
decisions, CEL conditions, the Kahn scheduler and the run lifecycle, against
tests/engine) without touching it. Any mutmut command and option works as with
``mutmut`` itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import mutmut.__main__
import mutmut.configuration

ENGINE_SETTINGS: dict[str, Any] = {
    "source_paths": ["engine"],
    "only_mutate": [
        "engine/routing.py",
        "engine/conditions.py",
        "engine/kahn.py",
        "engine/runner.py",
        "engine/completion.py",
        "engine/lifecycle.py",
        "engine/route_application.py",
        "engine/time_travel.py",
    ],
    "pytest_add_cli_args_test_selection": [
        "tests/engine",
        # subprocess tests run the unmutated package and take seconds each
        "--ignore=tests/engine/test_langgraph_process.py",
        "--ignore=tests/engine/test_store_faults.py",
        "-p",
        "no:cacheprovider",
    ],
    "also_copy": ["tests", "tui", "router", "research", "workflows"],
}
DIFFERENTIAL_EXAMPLES = "150"
"""Generated workflows per mutant: enough to reach every construct, few enough for one core."""


def engine_settings() -> Callable[[str, Any], Any]:
    return lambda key, default: ENGINE_SETTINGS.get(key, default)


def main() -> None:
    os.environ.setdefault("DIFFERENTIAL_EXAMPLES", DIFFERENTIAL_EXAMPLES)
    mutmut.configuration._config_reader = engine_settings
    sys.argv[0] = "mutmut"
    mutmut.__main__.cli()


if __name__ == "__main__":
    main()
