"""The `workbench` command loads a command's module only when that command runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click

from tui.cli import COMMANDS, cli

APPROVAL = Path(__file__).resolve().parents[2] / "workflows" / "approval.yaml"
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
    assert not {
        m for m in loaded if m.startswith("tui.commands.") and m != "tui.commands.root_options"
    }
    assert not {m for m in loaded if m.split(".")[0] in ("textual", "router", "research", "engine")}


def test_validate_loads_neither_the_app_nor_the_router_wiring() -> None:
    loaded = modules_loaded_by("validate", str(APPROVAL))
    assert "tui.commands.run_cmds" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "textual" or m.startswith("tui.app")}
    assert "tui.launch.wiring" not in loaded and "tui.commands.app_cmds" not in loaded
