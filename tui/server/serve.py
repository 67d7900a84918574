"""Running the run API on uvicorn until Ctrl-C or SIGTERM.

The socket is bound here, before uvicorn starts, so a port in use is one line and ``--port 0``
can say which port it got. uvicorn waits for open connections when it stops, and an SSE
stream never closes by itself: ``timeout_graceful_shutdown`` bounds that wait (sse-starlette
also ends its streams when it sees uvicorn stopping), so a server with followers attached
still stops within :data:`GRACEFUL_SHUTDOWN_S` seconds. Clients reconnect and resume from
their last event id.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from plumbing.network import is_loopback
from tui.server.auth import TOKEN_ENV, ServerToken

GRACEFUL_SHUTDOWN_S = 3
"""Seconds open requests and event streams get to finish when the server stops."""
EXTRA_CONNECTIONS = 56
"""Connections and requests served at once beyond the event streams (``--max-streams``):
past both, uvicorn answers 503 at once. The API's own stream limit answers in JSON first."""
KEEP_ALIVE_S = 75
"""How long an idle connection is kept open for a client's next request (uvicorn's 5 s default
closes it under a client that is about to reuse it, which then meets a reset connection)."""


class CannotListen(OSError):
    """The address cannot be listened on; ``str()`` is one line."""


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (0: a free port), listening."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=128)
    except OSError as error:
        raise CannotListen(
            f"cannot listen on {host}:{port} ({error.strerror or error}) — choose another"
            " --port, or a --host of this machine"
        ) from None


def server_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def announcement(
    url: str, host: str, token: ServerToken, store_display: str
) -> list[tuple[str, bool]]:
    """The lines a server starts with (and whether each goes to stderr): where it listens and
    which store it serves; the token it made, once; beyond loopback, a warning."""
    lines = [
        (f"workbench server on {url} serving {store_display}; OpenAPI at {url}/openapi.json", False)
    ]
    if token.made_here:
        lines.append(
            (
                f"token (no ${TOKEN_ENV} was set; shown this once): {token.value} — for clients:"
                f" export {TOKEN_ENV}=<the token>, then workbench --server {url}",
                False,
            )
        )
    if not is_loopback(host):
        lines.append(
            (
                f"warning: listening on {host}, beyond this machine: anyone who reaches it with"
                " the token steers runs, in clear unless a TLS proxy is in front",
                True,
            )
        )
    return lines


def run_server(app: Callable[..., Any], sock: socket.socket, max_streams: int) -> None:
    """Serve ``app`` (an ASGI application) on the bound ``sock`` until stopped."""
    import uvicorn

    config = uvicorn.Config(
        app,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        timeout_keep_alive=KEEP_ALIVE_S,
        limit_concurrency=max_streams + EXTRA_CONNECTIONS,
        log_level="warning",
        access_log=False,
        lifespan="on",
        server_header=False,
    )
    uvicorn.Server(config).run(sockets=[sock])
