"""Mutation testing of the engine: ``nice -n 19 .venv/bin/python tests/tools/mutate.py run
--max-children 1``, then ``.venv/bin/python tests/tools/mutate.py results``.

Run it as a file, not with ``-m``: mutmut runs the tests from its ``mutants/`` copy,
whose ``tests`` package must not already be imported from the worktree.

``[tool.mutmut]`` in pyproject.toml is the router's setup; mutmut reads only that
table, so this runs mutmut with the engine's settings instead (the routing
decisions, CEL conditions, the Kahn scheduler and the run lifecycle, against
tests/engine) without touching it. Any mutmut command and option works as with
``mutmut`` itself; name mutants to run a part, e.g. ``run "engine.conditions*"``.

``--tests PATH`` (repeatable, before the mutmut command) runs the mutants against those
test files instead of all of tests/engine: a part's own tests, when a full tests/engine
per mutant is too slow, e.g. ``--tests tests/engine/test_routing.py run "engine.routing*"``.
Use one selection per ``mutants/`` directory: mutmut keeps which tests cover a function there.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

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


def engine_settings(tests: list[str]) -> Callable[[str, Any], Any]:
    """The engine's settings; ``tests``, when given, replace tests/engine as the selection."""
    settings = dict(ENGINE_SETTINGS)
    if tests:
        settings["pytest_add_cli_args_test_selection"] = [*tests, "-p", "no:cacheprovider"]
    return lambda key, default: settings.get(key, default)


def take_test_selection(argv: list[str]) -> list[str]:
    """Remove every leading ``--tests PATH`` from ``argv`` and return the paths."""
    tests: list[str] = []
    while len(argv) >= 2 and argv[0] == "--tests":
        tests.append(argv[1])
        del argv[:2]
    return tests


def forget_compiled_expressions() -> None:
    """mutmut runs the clean tests in its own process, then forks one child per mutant:
    without this the child would inherit CEL expressions compiled by the clean run
    (engine.conditions caches them by text), and a mutant of the compile path — the
    references, columns and result types the loader reports — would never run."""
    conditions = sys.modules.get("engine.conditions")
    if conditions is not None:
        conditions._compile_cached.cache_clear()


def main() -> None:
    # before mutmut's modules load: some read the configuration when imported
    args = sys.argv[1:]
    tests = take_test_selection(args)
    sys.argv[1:] = args
    mutmut.configuration._config_reader = lambda: engine_settings(tests)
    mutmut.configuration.reset_config()
    os.register_at_fork(after_in_child=forget_compiled_expressions)
    sys.argv[0] = "mutmut"
    importlib.import_module("mutmut.__main__").cli()


if __name__ == "__main__":
    main()
