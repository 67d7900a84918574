"""Mutation testing of the engine: ``nice -n 19 .venv/bin/python tests/tools/mutate.py run
--max-children 1``, then ``.venv/bin/python tests/tools/mutate.py results``.

Run it as a file, not with ``-m``: mutmut runs the tests from its ``mutants/`` copy,
whose ``tests`` package must not already be imported from the worktree.

``[tool.mutmut]`` in pyproject.toml is the router's setup; mutmut reads only that
table, so this runs mutmut with the engine's settings instead (the routing
decisions, CEL conditions, the Kahn scheduler and the run lifecycle, against
tests/engine) without touching it. Any mutmut command and option works as with
``mutmut`` itself; name mutants to run a part, e.g. ``run "engine.conditions*"``. The
headless command line's printed lines and progress count (tui/present/console.py,
progress.py) are mutated too: run them with their own ``--tests`` (tests/tui).

``--tests PATH`` (repeatable, before the mutmut command) runs the mutants against those
test files instead of all of tests/engine: a part's own tests, when a full tests/engine
per mutant is too slow, e.g. ``--tests tests/engine/test_routing.py run "engine.routing*"``.
Use one selection per ``mutants/`` directory: mutmut keeps which tests cover a function there.

Each mutant's tests run fastest first (by the durations mutmut recorded): mutmut stops at the
first failing test but passes the tests in no particular order, so a mutant that a quick test
kills was often run through the slow property tests first.

``recheck NAME...`` runs each named mutant alone, in a fresh pytest process from ``mutants/``
(``MUTANT_UNDER_TEST=NAME``), over the tests mutmut recorded for its function or the ``--tests``
given, and prints killed or survived: how to confirm a survivor mutmut reported, or that a new
test kills it (copy the new test file into ``mutants/tests`` first).

``resume PATTERN...`` (with ``run``'s options) runs only the mutants matching the patterns that
have no result yet in ``mutants/``: ``run PATTERN`` runs every mutant it matches again, even
those with a result, so a stopped run cannot be continued with it. It needs the ``mutants/``
of an earlier ``run`` (mutmut writes the mutant names there) and sources unchanged since.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from math import inf
from pathlib import Path
from typing import Any

import mutmut.configuration
import pytest
from mutmut.runners.harness import PytestRunner
from mutmut.state import state

ENGINE_SETTINGS: dict[str, Any] = {
    "source_paths": ["engine", "tui"],
    "only_mutate": [
        "engine/routing.py",
        "engine/conditions.py",
        "engine/cel_parser.py",
        "engine/cel_analysis.py",
        "engine/cel_values.py",
        "engine/cel_budget.py",
        "engine/kahn.py",
        "engine/runner.py",
        "engine/readiness.py",
        "engine/run_state.py",
        "engine/completion.py",
        "engine/lifecycle.py",
        "engine/route_application.py",
        "engine/time_travel.py",
        "engine/langgraph_engine.py",
        "engine/langgraph_compile.py",
        "engine/graph.py",
        "engine/store/memory.py",
        "engine/store/base.py",
        "engine/recorder.py",
        "engine/trusted.py",
        "engine/store/records.py",
        "engine/store/sqlite.py",
        "engine/bus.py",
        "engine/event_lines.py",
        # the headless command line's printed lines and progress count (run with their own
        # --tests: tests/tui/test_headless_lines.py, tests/cli/test_progress_and_json.py)
        "tui/present/console.py",
        "tui/present/progress.py",
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
    "also_copy": ["tests", "router", "research", "agents", "workflows", "plumbing"],
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


def unrun_mutants(patterns: list[str], mutants: Path = Path("mutants")) -> list[str]:
    """The mutants matching ``patterns`` that have no result yet in ``mutants``."""
    names: list[str] = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        exit_codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        names += [
            name
            for name, exit_code in exit_codes.items()
            if exit_code is None and any(fnmatch.fnmatchcase(name, p) for p in patterns)
        ]
    return names


def expand_resume(argv: list[str]) -> list[str]:
    """``resume [--max-children N] PATTERN...`` as the ``run`` of the mutants not yet run."""
    options = [arg for index, arg in enumerate(argv[1:]) if _is_option(argv[1:], index)]
    patterns = [arg for index, arg in enumerate(argv[1:]) if not _is_option(argv[1:], index)]
    names = unrun_mutants(patterns)
    if not names:
        raise SystemExit(f"no mutant matching {' '.join(patterns)} is left to run in mutants/")
    return ["run", *options, *names]


def recheck(names: list[str], tests: list[str], mutants: Path = Path("mutants")) -> None:
    """Run each of ``names`` alone in a fresh process and print whether a test killed it."""
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    recorded: dict[str, list[str]] = stats["tests_by_mangled_function_name"]
    for name in names:
        selection = tests or sorted(recorded.get(name.rpartition("__mutmut_")[0], []))
        if not selection:
            print(f"{name}: no tests")
            continue
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *selection],
            cwd=mutants,
            env={**os.environ, "MUTANT_UNDER_TEST": name},
            capture_output=True,
            text=True,
        )
        verdict = {0: "survived", 1: "killed"}.get(
            done.returncode, f"pytest exit {done.returncode}"
        )
        failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
        print(f"{name}: {verdict}" + (f" by {failed[0].removeprefix('FAILED ')}" if failed else ""))


def _is_option(args: list[str], index: int) -> bool:
    """Whether ``args[index]`` is an option or the value of the option before it."""
    return args[index].startswith("-") or (index > 0 and args[index - 1] == "--max-children")


def forget_compiled_expressions() -> None:
    """mutmut runs the clean tests in its own process, then forks one child per mutant:
    without this the child would inherit CEL expressions compiled by the clean run
    (engine.conditions caches them by text, engine.cel_parser keeps their shapes and
    engine.cel_analysis what each shape reads), and a mutant of the compile path — the
    parse, the references, columns and result types the loader reports — would never run."""
    conditions = sys.modules.get("engine.conditions")
    if conditions is not None:
        conditions._compile_cached.cache_clear()
    parser = sys.modules.get("engine.cel_parser")
    if parser is not None:
        parser._SHAPES.clear()
    analysis = sys.modules.get("engine.cel_analysis")
    if analysis is not None:
        for cache in (analysis._DEPTHS, analysis._DECISIVE, analysis._ANALYSES):
            cache.clear()


class FastestFirst:
    """A pytest plugin for mutmut's runs: the collected tests in the order of mutmut's recorded
    durations, fastest first (tests not timed yet keep their order, last)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        durations = state().duration_by_test
        items.sort(key=lambda item: durations.get(item.nodeid, inf))


def run_fastest_first() -> None:
    """Add :class:`FastestFirst` to every pytest run of mutmut's (all happen in this process
    or its forks), without changing mutmut's configuration: a changed pytest command line
    makes mutmut discard every result it has."""
    execute = PytestRunner.execute_pytest

    def execute_fastest_first(self: PytestRunner, params: list[str], **kwargs: Any) -> int:
        plugins = [*kwargs.pop("plugins", []), FastestFirst()]
        return execute(self, params, plugins=plugins, **kwargs)

    PytestRunner.execute_pytest = execute_fastest_first  # type: ignore[method-assign]


def main() -> None:
    # before mutmut's modules load: some read the configuration when imported
    args = sys.argv[1:]
    tests = take_test_selection(args)
    if args and args[0] == "recheck":
        recheck(args[1:], tests)
        return
    if args and args[0] == "resume":
        args = expand_resume(args)
    sys.argv[1:] = args
    mutmut.configuration._config_reader = lambda: engine_settings(tests)
    mutmut.configuration.reset_config()
    os.register_at_fork(after_in_child=forget_compiled_expressions)
    run_fastest_first()
    sys.argv[0] = "mutmut"
    importlib.import_module("mutmut.__main__").cli()


if __name__ == "__main__":
    main()
