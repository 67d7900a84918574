"""The one `workbench` command: the composition root's command line.

Each package contributes a command module under ``tui/commands/``. This module imports none of
them up front: :class:`LazyCommands` names every top-level command with its module and its
one-line summary, so `workbench --help` lists them without loading any, and a command's module
is imported only when that command runs (`workbench validate` never loads Textual, the router
or research's steps).
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click
from click.core import ParameterSource

from tui.echo import clean_last_resort_logging
from tui.failures import FailureBoundary
from tui.root_options import (
    CONFIG_ENV,
    CONFIG_PATH_KEY,
    CONFIG_REQUIRED_KEY,
    SERVER_ENV,
    SERVER_KEY,
    WORKSPACE_KEY,
)


class Entry(NamedTuple):
    module: str
    """The module under ``tui.commands`` defining the command."""
    attribute: str
    summary: str
    """The first sentence of the command's help (tests/cli checks they agree)."""


COMMANDS: dict[str, Entry] = {
    "app": Entry(
        "app_cmds", "app_command", "Open the workbench (the default when `workbench` is run alone)."
    ),
    "corpus": Entry(
        "research_cmds",
        "corpus_group",
        "Manage the local research corpus (SQLite FTS5 in the workspace's corpus.sqlite).",
    ),
    "db": Entry(
        "store_cmds",
        "db_group",
        "The PostgreSQL store's schema: create and migrate it with upgrade.",
    ),
    "demo": Entry("app_cmds", "demo_group", "Demonstrations that need no network and no API keys."),
    "fault-server": Entry(
        "router_cmds",
        "fault_server_cmd",
        "Run the loopback fault-injecting provider server so you can watch the router cope.",
    ),
    "providers": Entry(
        "router_cmds",
        "providers_group",
        "Show every LLM provider: breaker state, cooldown, success rate, latency, headroom, "
        "in-flight.",
    ),
    "research": Entry(
        "research_cmds",
        "research_group",
        'Research a question: workbench research "question" [options].',
    ),
    "registry": Entry(
        "registry_cmds",
        "registry_group",
        "Agents, tools, model profiles and policies: list, show, validate.",
    ),
    "resume": Entry(
        "run_cmds",
        "resume_command",
        "Continue a run that was killed or is WAITING, without re-running finished steps.",
    ),
    "run": Entry("run_cmds", "run_command", "Run a workflow file and show its progress live."),
    "runs": Entry(
        "runs_cmds",
        "runs_group",
        "Read the run store: list, show, export; copy runs to another store.",
    ),
    "server": Entry(
        "server_cmds",
        "server_command",
        "Serve the run API: start, follow, answer and steer the PostgreSQL store's runs over HTTP.",
    ),
    "serve": Entry(
        "app_cmds",
        "serve_command",
        "Serve the workbench in a browser (textual-serve), behind a token.",
    ),
    "validate": Entry(
        "run_cmds",
        "validate_command",
        "Check a workflow file: every problem as file:line:col: message, or ok with a summary.",
    ),
    "worker": Entry(
        "worker_cmds",
        "worker_command",
        "Take queued runs from the PostgreSQL store and drive them until stopped (Ctrl+C).",
    ),
}


class LazyCommands(FailureBoundary):
    """The root group: commands imported when run and listed from :data:`COMMANDS`, each run
    inside the failure boundary (tui/failures.py)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command = getattr(importlib.import_module(f"tui.commands.{entry.module}"), entry.attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, click.Command(name, help=entry.summary).get_short_help_str(limit))
            for name, entry in sorted(COMMANDS.items())
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyCommands, invoke_without_command=True)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False),
    envvar="WORKBENCH_HOME",
    help="Workspace directory holding the SQLite files (default: the user data dir).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(),
    envvar=CONFIG_ENV,
    help="The config file (default: $WORKBENCH_CONFIG, else config.yaml in the user config dir).",
)
@click.option(
    "--server",
    envvar=SERVER_ENV,
    metavar="URL",
    help="Open the app on a `workbench server`'s runs (token: $WORKBENCH_TOKEN).",
)
@click.pass_context
def cli(
    ctx: click.Context, workspace: str | None, config_path: str | None, server: str | None
) -> None:
    """Research Workbench: bounded, auditable agentic research in the terminal."""
    ctx.ensure_object(dict)
    ctx.obj[SERVER_KEY] = server
    ctx.obj[WORKSPACE_KEY] = workspace
    ctx.obj[CONFIG_PATH_KEY] = config_path
    ctx.obj[CONFIG_REQUIRED_KEY] = (
        ctx.get_parameter_source("config_path") is ParameterSource.COMMANDLINE
    )
    if ctx.invoked_subcommand is None:
        app = cli.get_command(ctx, "app")
        assert app is not None
        ctx.invoke(app)


def main() -> None:
    """Run ``workbench``; every failure is one line (tui/failures.py), never a traceback."""
    clean_last_resort_logging()
    cli(prog_name="workbench")


if __name__ == "__main__":
    main()
