"""Who may use the run API: whoever sends ``Authorization: Bearer <token>``.

The token is ``$WORKBENCH_TOKEN``'s (at least :data:`MIN_TOKEN_CHARS` characters). A server
bound to loopback with no token set makes one and prints it once, as ``workbench serve``
does: only this machine's users can reach it, and the person who started it is the one who
reads it. A server bound beyond loopback refuses to start without ``$WORKBENCH_TOKEN``: a
token made there would have to travel to the other machines by hand anyway, and one chosen
on purpose is one the person knows to keep secret.

Tokens are compared in constant time (``hmac.compare_digest``), so the time an answer takes
says nothing about how much of a guessed token was right.
"""

from __future__ import annotations

import hmac
import os
import secrets
from dataclasses import dataclass

from plumbing.network import is_loopback

TOKEN_ENV = "WORKBENCH_TOKEN"
MIN_TOKEN_CHARS = 16
SCHEME = "Bearer"


class TokenRefused(ValueError):
    """The server cannot start with the token it was given (or without one); one line."""


@dataclass(frozen=True)
class ServerToken:
    value: str
    made_here: bool
    """Made by this server (no ``$WORKBENCH_TOKEN``): printed once at start."""

    def __repr__(self) -> str:
        return f"ServerToken(made_here={self.made_here})"


def server_token(host: str, environ: dict[str, str] | None = None) -> ServerToken:
    """The token a server bound to ``host`` requires (see the module doc)."""
    given = (os.environ if environ is None else environ).get(TOKEN_ENV, "")
    if given:
        if len(given) < MIN_TOKEN_CHARS:
            raise TokenRefused(
                f"${TOKEN_ENV} is {len(given)} characters; use at least {MIN_TOKEN_CHARS} random"
                " ones, e.g. export WORKBENCH_TOKEN=$(python3 -c 'import secrets;"
                " print(secrets.token_urlsafe(32))')"
            )
        return ServerToken(given, made_here=False)
    if not is_loopback(host):
        raise TokenRefused(
            f"serving on {host}, beyond this machine, needs ${TOKEN_ENV}: export a random token"
            " of at least 16 characters (python3 -c 'import secrets;"
            " print(secrets.token_urlsafe(32))') and give it to the clients"
        )
    return ServerToken(secrets.token_urlsafe(32), made_here=True)


def authorised(header: str | None, token: ServerToken) -> bool:
    """Whether an ``Authorization`` header carries ``token`` as a bearer token."""
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != SCHEME.lower():
        return False
    return hmac.compare_digest(given.strip().encode(), token.value.encode())
