"""`workbench worker`: take queued runs from the PostgreSQL store and drive them.

Any number of workers, on any number of machines, share one database (the config's
``store:``); tui/worker/ holds the queue, the leases and the reaper.
"""

from __future__ import annotations

import importlib
import logging

import click
from pydantic import ValidationError

from plumbing.untrusted_text import for_terminal
from tui.commands.command_context import BadInput, workspace_of
from tui.commands.numbers import field_range
from tui.worker.settings import WorkerSettings


class TerminalSafeFormatter(logging.Formatter):
    """A worker's log lines carry text from outside (database errors, a run's step errors, a
    workflow's names): each formatted line is shown with its control characters made visible,
    as every other line the workbench prints is."""

    def format(self, record: logging.LogRecord) -> str:
        return for_terminal(super().format(record))


@click.command("worker")
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(1, 64),
    default=2,
    show_default=True,
    help="Runs this worker drives at once (a run waiting for a person holds none).",
)
@click.option(
    "--store",
    "address",
    metavar="ADDRESS",
    help="The PostgreSQL database (default: the config's store:). Its password comes from"
    " PGPASSWORD or ~/.pgpass.",
)
@click.option(
    "--heartbeat",
    type=field_range(WorkerSettings, "heartbeat_s"),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="How often the worker tells the database it is alive and checks its runs' leases.",
)
@click.option(
    "--stalled-after",
    type=field_range(WorkerSettings, "stalled_after_s"),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="A worker silent this long is taken for dead: other workers continue its runs.",
)
@click.option(
    "--poll",
    type=field_range(WorkerSettings, "poll_s"),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="How often the queue is read besides its notifications.",
)
@click.option(
    "--import",
    "modules",
    multiple=True,
    metavar="MODULE",
    help="Import MODULE first: a Python module registering steps of your own (repeatable).",
)
@click.option("--name", help="This worker's name in its log lines (default: host:pid).")
@click.pass_context
def worker_command(
    ctx: click.Context,
    concurrency: int,
    address: str | None,
    heartbeat: float,
    stalled_after: float,
    poll: float,
    modules: tuple[str, ...],
    name: str | None,
) -> None:
    """Take queued runs from the PostgreSQL store and drive them until stopped (Ctrl+C)."""
    from plumbing.postgres import is_database_address
    from tui.config import config_from_context, config_path_for
    from tui.worker.worker import run_worker

    config = config_from_context(ctx)
    address = address or config.store
    if not address or not is_database_address(address):
        raise BadInput(
            "workers take runs from a PostgreSQL store: set store: postgresql://USER@HOST/DATABASE"
            f" in {config_path_for(ctx)}, or pass --store"
        )
    try:
        settings = WorkerSettings(
            concurrency=concurrency,
            heartbeat_s=heartbeat,
            stalled_after_s=stalled_after,
            poll_s=poll,
            reaper_every_s=min(1.0, heartbeat),
        )
    except ValidationError as error:
        raise BadInput(error.errors()[0]["msg"].removeprefix("Value error, ")) from None
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise BadInput(f"--import {module}: {error}") from None
    handler = logging.StreamHandler()
    handler.setFormatter(TerminalSafeFormatter("%(asctime)s %(message)s"))
    logging.basicConfig(handlers=[handler], level=logging.WARNING)
    logging.getLogger("workbench.worker").setLevel(logging.INFO)
    ctx.exit(run_worker(address, workspace_of(ctx), config, settings, name))
