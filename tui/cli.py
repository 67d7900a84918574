"""The one `workbench` command: the composition root's command line.

Each package contributes a command group module under ``tui/commands/``; this
module only assembles them.
"""

from __future__ import annotations

import click
from click.core import ParameterSource

from tui.commands import app_cmds, registry_cmds, research_cmds, router_cmds, run_cmds, runs_cmds
from tui.config import CONFIG_ENV, CONFIG_PATH_KEY, CONFIG_REQUIRED_KEY
from tui.failures import FailureBoundary
from tui.launch import agents_wiring

COMMAND_MODULES = (run_cmds, runs_cmds, router_cmds, research_cmds, registry_cmds, app_cmds)
"""Each module lists its click commands in ``COMMANDS``."""


@click.group(cls=FailureBoundary, invoke_without_command=True)
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
@click.pass_context
def cli(ctx: click.Context, workspace: str | None, config_path: str | None) -> None:
    """Research Workbench: bounded, auditable agentic research in the terminal."""
    ctx.ensure_object(dict)
    ctx.obj["workspace"] = workspace
    agents_wiring.use_workspace(workspace)
    ctx.obj[CONFIG_PATH_KEY] = config_path
    ctx.obj[CONFIG_REQUIRED_KEY] = (
        ctx.get_parameter_source("config_path") is ParameterSource.COMMANDLINE
    )
    if ctx.invoked_subcommand is None:
        ctx.invoke(app_cmds.app_command)


for _module in COMMAND_MODULES:
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """Run ``workbench``; every failure is one line (tui/failures.py), never a traceback."""
    cli(prog_name="workbench")


if __name__ == "__main__":
    main()
