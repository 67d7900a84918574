"""The one `workbench` command: the composition root's command line.

Each package contributes a command group module under ``tui/commands/``; this
module only assembles them.
"""
from __future__ import annotations

import importlib

import click

# (module under tui.commands, attribute) — each module exposes click commands/groups.
_COMMAND_MODULES: tuple[str, ...] = ("engine_cmds", "router_cmds", "research_cmds", "app_cmds")


@click.group(invoke_without_command=True)
@click.option("--workspace", type=click.Path(file_okay=False), envvar="WORKBENCH_HOME",
              help="Workspace directory holding the SQLite files (default: the user data dir).")
@click.pass_context
def cli(ctx: click.Context, workspace: str | None) -> None:
    """Research Workbench: bounded, auditable agentic research in the terminal."""
    ctx.ensure_object(dict)
    ctx.obj["workspace"] = workspace
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
