"""The `workbench` command loads a command's module only when that command runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tui.cli import COMMANDS, cli

WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"
APPROVAL = WORKFLOWS / "approval.yaml"
DEEP_RESEARCH = WORKFLOWS / "deep_research.yaml"
LOADED = """
import json, sys
from click.testing import CliRunner
from tui.cli import cli
result = CliRunner().invoke(cli, sys.argv[1:])
assert result.exit_code == 0, result.output
print(json.dumps(sorted(sys.modules)))
"""


def modules_loaded_by(*args: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``workbench ARGS``."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_every_command_is_listed_with_its_own_summary() -> None:
    for name, entry in COMMANDS.items():
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name
        assert entry.summary == command.get_short_help_str(limit=10**6), name


def test_help_loads_no_command_module() -> None:
    loaded = modules_loaded_by("--help")
    assert not {m for m in loaded if m.startswith("tui.commands.") and m != "tui.root_options"}
    assert not {
        m
        for m in loaded
        if m.split(".")[0] in ("textual", "router", "research", "engine", "sqlite3")
    }


def test_validate_loads_neither_the_app_nor_the_router_wiring() -> None:
    loaded = modules_loaded_by("validate", str(APPROVAL))
    assert "tui.commands.run_cmds" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "textual" or m.startswith("tui.app")}
    assert "tui.launch.wiring" not in loaded and "tui.commands.app_cmds" not in loaded


def test_validate_loads_neither_the_router_nor_httpx() -> None:
    """`router/__init__` names its exports lazily, so reaching `router.config` or `router.models`
    (through the research steps validate registers) does not import the router or httpx."""
    loaded = modules_loaded_by("validate", str(APPROVAL))
    assert "router.router" not in loaded
    assert not {m for m in loaded if m.split(".")[0] == "httpx"}


def test_validate_imports_only_the_step_families_and_checks_the_file_needs() -> None:
    """A workflow of demo steps loads neither research, nor the agents (their registry files,
    models and the router's config), nor networkx; one of research steps loads research's."""
    loaded = modules_loaded_by("validate", str(APPROVAL))
    assert "engine.demo_steps" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("networkx", "router")}
    assert not {m for m in loaded if m.startswith("research.steps")}
    assert not {m for m in loaded if m.startswith("agents")}
    assert "tui.launch.agents_wiring" not in loaded
    loaded = modules_loaded_by("validate", str(DEEP_RESEARCH))
    assert "research.steps" in loaded and "engine.demo_steps" not in loaded
    assert not {m for m in loaded if m.split(".")[0] == "networkx"}
    assert not {m for m in loaded if m.startswith("agents")}


RESEARCH_STEP_IMPLEMENTATION = (
    "research.pipeline",
    "research.extractive",
    "research.tasks",
    "research.questions",
    "research.prompts",
    "research.events",
)
"""What only running research's steps needs (the model pipeline, the task schemas, the built-in
extractive model and its question planner, the prompts, the event payloads), beside the router
the pipeline calls."""


def test_validate_of_research_steps_imports_their_models_not_what_runs_them() -> None:
    """Checking a workflow of research steps needs each step's name and its input and output
    models; the model pipeline, the task schemas and the router load when a step runs."""
    loaded = modules_loaded_by("validate", str(DEEP_RESEARCH))
    assert {"research.steps.intake", "research.steps.delivery"} <= loaded
    assert not loaded & set(RESEARCH_STEP_IMPLEMENTATION)
    assert not {m for m in loaded if m.split(".")[0] == "router"}


RUN_MACHINERY_PACKAGES = ("textual", "rich", "httpx", "asyncio", "langgraph", "networkx", "sqlite3")
"""What shows, prints, serves, stores or schedules a run: `validate` needs none of them."""
RUN_MACHINERY_MODULES = (
    "engine.store",
    "tui.present.headless",
    "engine.runner",
    "engine.kahn",
    "engine.lifecycle",
    "router.router",
    "tui.commands.common",
    "tui.launch.run",
    "tui.launch.wiring",
)
"""The run store, the live printer, the engines, the router and the run launcher."""


@pytest.mark.parametrize("workflow", [APPROVAL, DEEP_RESEARCH], ids=lambda path: path.stem)
def test_validate_imports_none_of_the_run_machinery(workflow: Path) -> None:
    """`workbench validate` checks a file: it imports the loader and the steps' types, never what
    runs, stores or shows a run — so its start-up time cannot silently grow back."""
    loaded = modules_loaded_by("validate", str(workflow))
    assert "engine.loader" in loaded
    assert not {m for m in loaded if m.split(".")[0] in RUN_MACHINERY_PACKAGES}
    assert not {m for m in loaded if m.startswith(RUN_MACHINERY_MODULES)}


def test_validate_of_demo_steps_imports_nothing_of_research_or_the_router() -> None:
    loaded = modules_loaded_by("validate", str(APPROVAL))
    assert not {m for m in loaded if m.split(".")[0] in ("research", "router")}


def test_the_router_package_still_exports_its_names_on_first_use() -> None:
    import router

    assert router.SmartModelRouter.__module__ == "router.router"
    assert router.ChatRequest.__module__ == "router.models"
    for name in router.__all__:
        assert getattr(router, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        router.nothing_here  # noqa: B018


CEL_AND_GRAPHS = ("celpy", "lark", "networkx")
"""Half a second of imports: conditions' CEL and the graph library the loop guards use."""


def test_runs_list_loads_no_cel_and_no_graph_library(tmp_path: Path) -> None:
    """Reading the store evaluates no condition: `runs list` imported CEL through the fork's
    engine module."""
    loaded = modules_loaded_by("--workspace", str(tmp_path), "runs", "list")
    assert not {m for m in loaded if m.split(".")[0] in CEL_AND_GRAPHS}


def test_a_run_without_loops_loads_no_graph_library(tmp_path: Path) -> None:
    """networkx only guards loops: a fan-out run loaded it for nothing (a third of a second)."""
    loaded = modules_loaded_by(
        "--workspace", str(tmp_path), "run", str(WORKFLOWS / "fan_out.yaml"), "--headless"
    )
    assert "engine.runner" in loaded and "celpy" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "networkx"}


def test_the_app_before_its_first_frame_loads_no_cel_and_no_graph_library() -> None:
    """What the app imports before Home's first frame (the app command, the app, Home) has no
    use for CEL or networkx: the workflow list that compiles conditions loads after the frame."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, tui.commands.app_cmds, tui.app.app\n"
            "print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert "tui.app.screens.home" in loaded
    assert not {m for m in loaded if m.split(".")[0] in CEL_AND_GRAPHS}
