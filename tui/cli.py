"""The one `workbench` command: the composition root's command line.

Each package contributes a command group module under ``tui/commands/``; this
module only assembles them.
"""
from __future__ import annotations

import importlib

import click
from click.core import ParameterSource

from tui.config import CONFIG_ENV, CONFIG_PATH_KEY, CONFIG_REQUIRED_KEY

# (module under tui.commands, attribute) — each module exposes click commands/groups.
_COMMAND_MODULES: tuple[str, ...] = ("engine_cmds", "router_cmds", "research_cmds", "app_cmds")


@click.group(invoke_without_command=True)
@click.option("--workspace", type=click.Path(file_okay=False), envvar="WORKBENCH_HOME",
              help="Workspace directory holding the SQLite files (default: the user data dir).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar=CONFIG_ENV,
              help="The config file (default: $WORKBENCH_CONFIG, else config.yaml in the user config dir).")
@click.pass_context
def cli(ctx: click.Context, workspace: str | None, config_path: str | None) -> None:
    """Research Workbench: bounded, auditable agentic research in the terminal."""
    ctx.ensure_object(dict)
    ctx.obj["workspace"] = workspace
    ctx.obj[CONFIG_PATH_KEY] = config_path
    ctx.obj[CONFIG_REQUIRED_KEY] = ctx.get_parameter_source("config_path") is ParameterSource.COMMANDLINE
    if ctx.invoked_subcommand is None:
        default = cli.commands.get("app")
        if default is None:
            click.echo(ctx.get_help())
            return
        ctx.invoke(default)


def _register_commands() -> None:
    for module_name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"tui.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"tui.commands.{module_name}":
                continue
            raise
        for command in getattr(module, "COMMANDS", ()):
            cli.add_command(command)


_register_commands()


def main() -> None:
    cli(prog_name="workbench")


if __name__ == "__main__":
    main()
