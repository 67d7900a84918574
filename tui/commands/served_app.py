"""`workbench serve`'s server: textual-serve behind a token, an Origin check and a session cap.

Each WebSocket textual-serve accepts starts an app process that can start runs, read every
report and answer prompts, so a connection must prove it was given the address the command
printed: the token rides in it (``/?token=…``, or ``$WORKBENCH_TOKEN``), the page trades it for
an HttpOnly, SameSite=Strict cookie (the address bar and history lose it), and the WebSocket
brings the cookie — or ``?token=`` for a script. A WebSocket from another site's page is refused
by its ``Origin`` (cross-site WebSocket hijacking: a browser sends the user's cookies along, and
the Origin it sets is the one thing that page cannot forge). At most ``max_sessions`` app
processes run at once; one more is told so in the page and closed.

textual-serve offers no hook for any of this, but its routes call the server's own
``handle_index``, ``handle_websocket`` and ``handle_download`` methods, so a subclass checks
each request before handing it on — a few methods rather than a fork of the package.
"""

from __future__ import annotations

import errno
import hmac
import logging
import os
import secrets
import socket
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server

from plumbing.network import is_loopback
from tui.config import ConfigError
from tui.echo import echo
from tui.present.console import SafeConsole

TOKEN_ENV = "WORKBENCH_TOKEN"
TOKEN_COOKIE = "workbench_token"
MIN_TOKEN_CHARS = 16
TRY_AGAIN_LATER = 1013
"""WebSocket close code: the server is overloaded, try again later (RFC 6455 registry)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a URL or an ``Origin`` header, None when it has none."""
    try:
        parts = urlsplit(url.strip().lower())
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return parts.scheme, parts.hostname, port


def allowed_origins(public_url: str) -> set[tuple[str, str, int]]:
    """The origins the served page itself has: its public URL's, and on loopback each name of
    this machine at that port (the same page opened as localhost or 127.0.0.1)."""
    own = _origin(public_url)
    assert own is not None, public_url
    scheme, host, port = own
    if not is_loopback(host):
        return {own}
    return {own} | {(scheme, name, port) for name in ("localhost", "127.0.0.1", "::1")}


class GuardedServer(Server):
    """textual-serve's server, each request checked before textual-serve handles it."""

    def __init__(self, command: str, *, token: str, max_sessions: int, **options: Any) -> None:
        super().__init__(command, **options)
        self.console = SafeConsole()  # textual-serve's own log lines, cleaned too
        self.token = token
        self.max_sessions = max_sessions
        self.sessions = 0
        self.origins = allowed_origins(self.public_url)

    def initialize_logging(self) -> None:
        super().initialize_logging()
        # aiohttp logs each request line, the token in the first one's address
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    async def on_startup(self, app: web.Application) -> None:
        """Say where the app is, instead of textual-serve's banner."""

    def _authorised(self, request: web.Request) -> bool:
        given = request.cookies.get(TOKEN_COOKIE) or request.query.get("token") or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        given = request.query.get("token")
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            page = web.HTTPSeeOther("/")
            page.set_cookie(
                TOKEN_COOKIE,
                self.token,
                httponly=True,
                samesite="Strict",
                secure=self.public_url.startswith("https:"),
                path="/",
            )
            raise page  # aiohttp's redirects are raised (returning one is deprecated)
        if not self._authorised(request):
            raise web.HTTPUnauthorized(
                text="Research Workbench: open the address `workbench serve` printed"
                " (it carries the token), or add ?token=<$WORKBENCH_TOKEN> to this one.\n"
            )
        response: web.StreamResponse = await super().handle_index(request)
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if not self._authorised(request):
            raise web.HTTPUnauthorized(text="a token is needed (see `workbench serve`)\n")
        origin = request.headers.get("Origin")
        if origin is not None and _origin(origin) not in self.origins:
            raise web.HTTPForbidden(text=f"a page of another site ({origin}) may not connect\n")
        if self.sessions >= self.max_sessions:
            return await self._refuse_session(request)
        self.sessions += 1
        try:
            return await super().handle_websocket(request)
        finally:
            self.sessions -= 1

    async def _refuse_session(self, request: web.Request) -> web.WebSocketResponse:
        """Tell the page, in its terminal, why no app starts, and close."""
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        open_now = "1 session is" if self.max_sessions == 1 else f"{self.max_sessions} sessions are"
        await socket.send_bytes(
            f"\r\nResearch Workbench: {open_now} open already, the most this server allows"
            " (workbench serve --max-sessions); close one and reload this page.\r\n".encode()
        )
        await socket.close(code=TRY_AGAIN_LATER, message=b"too many sessions")
        return socket

    async def handle_download(self, request: web.Request) -> web.StreamResponse:
        if not self._authorised(request):
            raise web.HTTPUnauthorized(text="a token is needed (see `workbench serve`)\n")
        response: web.StreamResponse = await super().handle_download(request)
        return response


def serve(command: str, *, host: str, port: int, public_url: str | None, max_sessions: int) -> None:
    """Serve the app until Ctrl-C, saying first where (and, beyond loopback, at what risk).

    The token is ``$WORKBENCH_TOKEN``'s, read once (the app processes do not inherit it), else
    made here and printed in the address."""
    _check_address(host, port, public_url)
    token = os.environ.pop(TOKEN_ENV, None)
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"${TOKEN_ENV} is {len(token)} characters; use at least {MIN_TOKEN_CHARS} random ones"
            " (or unset it and a token is made for this server)"
        )
    server = GuardedServer(
        command,
        token=token or secrets.token_urlsafe(32),
        max_sessions=max_sessions,
        host=host,
        port=port,
        title="Research Workbench",
        public_url=public_url,
    )
    for line, to_stderr in announcement(server, host, token_from_env=token is not None):
        echo(line, err=to_stderr)
    try:
        server.serve()
    except OSError as error:
        if error.errno not in _CANNOT_LISTEN:
            raise
        raise ConfigError(
            f"cannot listen on {host}:{port} ({error.strerror or error}) — choose another --port"
            " or --host"
        ) from None


_CANNOT_LISTEN = (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES)
"""Why a server cannot bind its address: taken, not this machine's, or a port below 1024."""


def _check_address(host: str, port: int, public_url: str | None) -> None:
    """Refuse, before anything starts, a ``--host`` that names no address and a
    ``--public-url`` that is no http(s) address (the page's origin is read from it)."""
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise ConfigError(
            f"--host {host!r} names no address ({error}); give an IP address"
            " or a host name, e.g. 127.0.0.1"
        ) from None
    if public_url is not None and (
        _origin(public_url) is None or not public_url.lower().startswith(("http://", "https://"))
    ):
        raise ConfigError(
            f"--public-url {public_url!r} is not an http(s) address; give the one browsers use,"
            " e.g. https://workbench.example.org"
        )


def announcement(
    server: GuardedServer, host: str, *, token_from_env: bool
) -> list[tuple[str, bool]]:
    """The lines ``serve`` starts with (and whether each goes to stderr): where the app is — the
    token in the address unless the person chose it — and, bound beyond loopback, a warning."""
    token = "$" + TOKEN_ENV if token_from_env else server.token
    lines = [
        (f"Research Workbench served at {server.public_url}/?token={token}", False),
        (
            f"at most {server.max_sessions} sessions at once; Ctrl-C stops the server"
            " (docs/security.md: serving behind a TLS reverse proxy)",
            False,
        ),
    ]
    if not is_loopback(host):
        lines.append(
            (
                f"warning: listening on {host}, beyond this machine: anyone who reaches port"
                f" {server.port} with the token drives the workbench, in clear unless a TLS"
                " proxy is in front",
                True,
            )
        )
    return lines
