"""Mutation testing of the engine: ``nice python -m tests.tools.mutate run --max-children 1``,
then ``python -m tests.tools.mutate results``.

``[tool.mutmut]`` in pyproject.toml is the router's setup; mutmut reads only that
table, so this runs mutmut with the engine's settings instead (the routing
decisions, CEL conditions, the Kahn scheduler and the run lifecycle, against
tests/engine) without touching it. Any mutmut command and option works as with
``mutmut`` itself; name mutants to run a part, e.g. ``run "engine.conditions*"``.
"""

from __future__ import annotations

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
        # Tests in other processes run the unmutated package and take seconds each; the
        # generated-workflow suites take minutes per mutant (they run under make fuzz).
        *(
            f"--ignore=tests/engine/{name}.py"
            for name in (
                "test_agent_resume",
                "test_langgraph_process",
                "test_resume",
                "test_run_owner",
                "test_store_faults",
                "test_differential",
                "test_conformance",
            )
        ),
        "-p",
        "no:cacheprovider",
    ],
    "also_copy": ["tests", "tui", "router", "research", "workflows"],
}


def engine_settings() -> Callable[[str, Any], Any]:
    return lambda key, default: ENGINE_SETTINGS.get(key, default)


def main() -> None:
    mutmut.configuration._config_reader = engine_settings
    sys.argv[0] = "mutmut"
    mutmut.__main__.cli()


if __name__ == "__main__":
    main()
