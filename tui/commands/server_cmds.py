"""`workbench server`: the run API over HTTP (tui/server/)."""

from __future__ import annotations

import click

from tui.commands.command_context import BadInput, workspace_of
from tui.echo import echo
from tui.server import MAX_STREAMS

DEFAULT_PORT = 8765


@click.command("server")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on; beyond loopback, $WORKBENCH_TOKEN must be set.",
)
@click.option(
    "--port",
    default=DEFAULT_PORT,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="TCP port (0: a free one, printed).",
)
@click.option(
    "--max-streams",
    default=MAX_STREAMS,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Live event streams followed at once; more are refused (503) until one closes.",
)
@click.pass_context
def server_command(ctx: click.Context, host: str, port: int, max_streams: int) -> None:
    """Serve the run API: start, follow, answer and steer the PostgreSQL store's runs over HTTP.

    Every request needs the bearer token $WORKBENCH_TOKEN; on loopback without it the server
    makes one and prints it once. Runs are executed by `workbench worker` processes. The API is
    described at /openapi.json.
    """
    from tui.config import config_from_context, config_path_for
    from tui.server.app import create_app
    from tui.server.auth import TokenRefused, server_token
    from tui.server.serve import CannotListen, announcement, listen, run_server, server_url
    from tui.server.services import NeedsPostgres, ServerServices, server_store_address

    settings = config_from_context(ctx)
    try:
        server_store_address(settings, str(config_path_for(ctx)))
        token = server_token(host)
    except (NeedsPostgres, TokenRefused) as error:
        raise BadInput(str(error)) from None
    services = ServerServices(workspace_of(ctx), settings, token, max_streams=max_streams)
    services.open_store()
    try:
        try:
            sock = listen(host, port)
        except CannotListen as error:
            raise BadInput(str(error)) from None
        for line, to_stderr in announcement(
            server_url(sock), host, token, services.runs.database.display
        ):
            echo(line, err=to_stderr)
        run_server(create_app(services), sock, max_streams)
    finally:
        services.close_store()


COMMANDS: list[click.Command] = [server_command]
