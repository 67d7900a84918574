"""HTTP to a `workbench server`: the bearer token from ``$WORKBENCH_TOKEN``, every wait and
every answer bounded, every refusal one line.

A server's answers are text from outside: a body is read up to :data:`MAX_RESPONSE_BYTES` and
no further, and an error is shown as the server's one line (its ``error``), cut to
:data:`MAX_ERROR_CHARS` characters and stripped of control characters, never as raw text.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

TOKEN_ENV = "WORKBENCH_TOKEN"
MAX_RESPONSE_BYTES = 64_000_000
"""The largest answer read (a run's whole event history is the largest there is)."""
MAX_ERROR_CHARS = 300
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


class ServerError(Exception):
    """The server refused a request, or cannot be reached; ``str()`` is one line."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class ServerUnreachable(ServerError, ConnectionError):
    """The server cannot be reached (down, restarting, no route): worth trying again."""


class NotOnServer(ServerError, LookupError):
    """No such run or prompt on the server (404): what a local store's LookupError says."""


def _printable(text: str) -> str:
    """One line of ``text`` without control characters, at most :data:`MAX_ERROR_CHARS`."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    return " ".join(flat.split())[:MAX_ERROR_CHARS]


def server_url(url: str) -> str:
    """``url`` checked to be an http(s) address (:class:`ServerError`, one line, otherwise)."""
    try:
        parsed: httpx.URL | None = httpx.URL(url)
    except httpx.InvalidURL:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise ServerError(
            f"--server {_printable(url)!r} is not a server address; give one like"
            " http://127.0.0.1:8765 (what `workbench server` printed)"
        )
    return str(parsed).rstrip("/")


def auth_headers(environ: dict[str, str] | None = None) -> dict[str, str]:
    token = (os.environ if environ is None else environ).get(TOKEN_ENV, "")
    return {"Authorization": f"Bearer {token}"} if token else {}


def refusal(response: httpx.Response, body: bytes, url: str) -> ServerError:
    """The one line for a refused request: the server's ``error``, else its status."""
    try:
        said = json.loads(body).get("error")
    except (ValueError, AttributeError):
        said = None
    line = _printable(said) if isinstance(said, str) and said else f"HTTP {response.status_code}"
    kind = NotOnServer if response.status_code == 404 else ServerError
    return kind(f"the server at {url} refused: {line}", response.status_code)


def unreachable(url: str, error: httpx.HTTPError) -> ServerUnreachable:
    detail = _printable(str(error)) or type(error).__name__
    return ServerUnreachable(
        f"cannot reach the server at {url} ({detail}); is `workbench server` running there?"
    )


class ServerClient:
    """A `workbench server` at ``url``: JSON requests, answers bounded in size and time."""

    def __init__(
        self, url: str, environ: dict[str, str] | None = None, timeout: httpx.Timeout = TIMEOUT
    ) -> None:
        self.url = server_url(url)
        self.headers = auth_headers(environ)
        self._http = httpx.Client(base_url=self.url, headers=self.headers, timeout=timeout)

    def request(self, method: str, path: str, **given: Any) -> Any:
        """The JSON the server answers ``method path`` with; :class:`ServerError` otherwise."""
        try:
            with self._http.stream(method, path, **given) as response:
                body = read_bounded(response)
        except httpx.HTTPError as error:
            raise unreachable(self.url, error) from None
        if response.status_code >= 400:
            raise refusal(response, body, self.url)
        try:
            return json.loads(body)
        except ValueError:
            raise ServerError(f"the server at {self.url} answered something not JSON") from None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("POST", path, json=body)

    def close(self) -> None:
        self._http.close()


def read_bounded(response: httpx.Response) -> bytes:
    """The body, refused past :data:`MAX_RESPONSE_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise ServerError(
                f"the server's answer is larger than {MAX_RESPONSE_BYTES // 1_000_000} MB,"
                " the most this client reads"
            )
        chunks.append(chunk)
    return b"".join(chunks)
