"""``workbench registry list|show|validate``: the agents, tools, model profiles and policies
the workbench has loaded, where each was written, and every problem as ``file:line:col``."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from agents.registry import Registry
from agents.registry_loader import SECTIONS, RegistryLoad, load_registry, registry_files
from agents.schema import describe
from agents.tools import TOOL_IMPLEMENTATIONS
from tui.commands.command_context import BadInput, workspace_of
from tui.echo import echo, echo_json
from tui.exit_codes import FAILED
from tui.launch import agents_wiring
from tui.present.console import SafeConsole

KINDS = click.Choice(list(SECTIONS))


def _load(ctx: click.Context) -> RegistryLoad:
    return workspace_of(ctx).agent_registry


def _summary(registry: Registry, kind: str, name: str) -> str:
    if kind == "agents":
        agent = registry.agent(name)
        return f"{agent.role} [model {agent.model}; tools {', '.join(agent.tools) or 'none'}]"
    if kind == "tools":
        tool = registry.tool(name)
        return f"{tool.description} [{tool.side_effect}; runs {tool.runs}]"
    if kind == "models":
        profile = registry.model(name)
        target = profile.provider or f"tier {profile.tier}"
        return f"{target}{f' / {profile.model}' if profile.model else ''}"
    policy = registry.policies[name].definition
    return policy.description or f"{len(policy.agents)} agent rule(s)"


@click.group("registry")
def registry_group() -> None:
    """Agents, tools, model profiles and policies: list, show, validate.

    Shipped ones live under workflows/; the user's own in the workspace's and the config
    directory's agents/, tools/, models/ and policies/ folders."""


@registry_group.command("list")
@click.option("--kind", type=KINDS, help="Only this kind.")
@click.pass_context
def registry_list(ctx: click.Context, kind: str | None) -> None:
    """Every definition loaded, by kind, with where it was written."""
    loaded = _load(ctx)
    console = SafeConsole(soft_wrap=False)
    for section, entries in loaded.registry.kinds().items():
        if kind is not None and section != kind:
            continue
        table = Table(title=section, title_justify="left")
        for column in ("name", "what", "from"):
            table.add_column(column)
        for name, entry in sorted(entries.items()):
            table.add_row(name, _summary(loaded.registry, section, name), entry.origin.root)
        console.print(table)
    if loaded.problems:
        echo(
            f"{len(loaded.problems)} problem(s); `workbench registry validate` lists them",
            err=True,
        )


@registry_group.command("show")
@click.argument("name")
@click.option("--kind", type=KINDS, help="Which kind, when a name is used by more than one.")
@click.pass_context
def registry_show(ctx: click.Context, name: str, kind: str | None) -> None:
    """One definition in full (as JSON), with the file and line it came from."""
    loaded = _load(ctx)
    found = [
        (section, entries[name])
        for section, entries in loaded.registry.kinds().items()
        if name in entries and (kind is None or section == kind)
    ]
    if not found:
        raise BadInput(f"no agent, tool, model profile or policy named {name!r}")
    for section, entry in found:
        data = entry.definition.model_dump(mode="json", exclude_defaults=False)
        echo(f"{section[:-1]} {name}  ({entry.origin}, {entry.origin.root})")
        if section == "agents":
            data["output"] = describe(loaded.registry.agent(name).output)
        echo_json(data)


@registry_group.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.pass_context
def registry_validate(ctx: click.Context, paths: tuple[str, ...]) -> None:
    """Check the registry (or the given folders and files): every problem as file:line:col: message.

    A folder is read like a registry root (its agents/, tools/, models/ and policies/), a
    file as one registry file, after the shipped registry so they can refer to the shipped
    definitions. Exit 1 on problems.
    """
    if paths:
        folders = [Path(p) for p in paths if Path(p).is_dir()]
        for folder in folders:
            if not registry_files(folder):
                raise BadInput(
                    f"{folder}: holds no registry file (YAML under agents/, tools/, models/ or "
                    "policies/); name a registry folder or a registry file"
                )
        loaded = load_registry(
            [(agents_wiring.SHIPPED_ROOT, "shipped")] + [(f, "given") for f in folders],
            TOOL_IMPLEMENTATIONS.names(),
            files=[Path(p) for p in paths if not Path(p).is_dir()],
        )
    else:
        loaded = _load(ctx)
    for problem in loaded.problems:
        echo(str(problem), err=True)
    counts = ", ".join(
        f"{len(entries)} {section}" for section, entries in loaded.registry.kinds().items()
    )
    if loaded.problems:
        echo(f"invalid: {len(loaded.problems)} problem(s); valid: {counts}", err=True)
        sys.exit(FAILED)
    echo(f"ok: {counts} from {len(loaded.files)} file(s)")


COMMANDS = [registry_group]
