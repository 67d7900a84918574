"""The PostgreSQL store's schema: `workbench db upgrade`.

(`workbench runs copy`, which moves runs between a workspace and a database, is with the other
`runs` commands.)
"""

from __future__ import annotations

import click

from tui.commands.command_context import BadInput
from tui.echo import echo


@click.group("db")
def db_group() -> None:
    """The PostgreSQL store's schema: create and migrate it with upgrade."""


@db_group.command("upgrade")
@click.option(
    "--store",
    "address",
    metavar="ADDRESS",
    help="The PostgreSQL database (default: the config's store:). Its password comes from"
    " PGPASSWORD or ~/.pgpass.",
)
@click.pass_context
def db_upgrade(ctx: click.Context, address: str | None) -> None:
    """Create the PostgreSQL store's tables, or migrate them to this version of the workbench.

    Runs, provider statistics and LangGraph's checkpoints; running it again changes nothing.
    """
    from plumbing.postgres import Database, is_database_address
    from tui.config import config_from_context, config_path_for
    from tui.launch.stores import upgrade_database

    address = address or config_from_context(ctx).store
    if not address:
        raise BadInput(
            "no PostgreSQL store to upgrade: set store: postgresql://USER@HOST/DATABASE in "
            f"{config_path_for(ctx)}, or pass --store"
        )
    if not is_database_address(address):
        raise BadInput("--store is not a PostgreSQL address; write postgresql://USER@HOST/DATABASE")
    applied = upgrade_database(address)
    where = Database(address).display
    if applied:
        echo(f"{where}: schema upgraded ({', '.join(applied)}); LangGraph checkpoints ready")
    else:
        echo(f"{where}: schema up to date")
