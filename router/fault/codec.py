"""What a fault-server codec is: one API family's side of the wire, as its real server speaks it.

A codec recognises its family's paths, refuses what the real API refuses, and writes the
family's success bodies, error bodies, rate-limit headers and streamed frames, following each
provider's documented shapes, so the router's adapters and classifiers are tested against the
same formats they meet in production. Each adapter names its codec
(``ProviderAdapter.codec``); the server finds them there (router/fault/protocols.py).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any, ClassVar

SSE_CONTENT_TYPE = "text/event-stream"


@dataclass(frozen=True, slots=True)
class Route:
    kind: str  # "chat" | "health" | "unknown"
    protocol: str
    model: str | None = None
    stream: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer the server is to send: what the responder answered (text, or an object sent as
    JSON) and the request's facts the API echoes back."""

    model: str
    content: str | dict[str, Any]
    request: Any
    """The request's JSON body (a structured request shapes the answer)."""
    input_tokens: int
    serial: int
    """This answer's number, for ids."""
    truncated: bool = False
    """Send its first half, stopped at the output-token limit as the API says it."""

    @property
    def text(self) -> str:
        text = self.content if isinstance(self.content, str) else json.dumps(self.content)
        return text[: len(text) // 2] if self.truncated else text

    @property
    def output_tokens(self) -> int:
        return max(1, len(self.text) // 4)


@dataclass(frozen=True, slots=True)
class RateWindow:
    """A scripted provider's rate limits as one answer reports them."""

    rpm: int | None
    rpm_left: int
    tpm: int | None
    tpm_left: int
    reset_requests_s: float
    reset_tokens_s: float


@dataclass(frozen=True)
class Refused:
    """A request the real server would refuse: the status, and either a message for the
    protocol's error body or (``body``) the whole body a particular server sends instead."""

    status: int
    message: str
    body: dict[str, Any] | None = None


class FaultCodec:
    """One API family. Subclasses set the class attributes and write the bodies; the defaults
    are what most families share (SSE streams, Retry-After headers, no rate-limit headers)."""

    protocol: ClassVar[str]
    """The family's name in recorded requests (``RecordedRequest.protocol``)."""
    fallback: ClassVar[bool] = False
    """Whether this codec answers the paths no other codec claims (one codec does: OpenAI's)."""
    known_fields: ClassVar[frozenset[str]] = frozenset()
    """Top-level request fields the API documents (its reference pages, mirrored by the official
    SDKs' request types); anything else is refused with a 400, as the real API does."""
    required_fields: ClassVar[tuple[str, ...]] = ()
    auth_header: ClassVar[str | None] = None
    """The header that carries the key, checked when a provider is scripted ``auth: required``."""
    stream_content_type: ClassVar[str] = SSE_CONTENT_TYPE

    def route(
        self, method: str, api_path: str, fields: dict[str, Any], headers: dict[str, str]
    ) -> Route | None:
        """The endpoint a request (path below the provider prefix; ``fields``: its JSON object
        body, else empty) is for, when it is one of this family's."""
        raise NotImplementedError

    def last_message_text(self, body: dict[str, Any]) -> str:
        """The text of the last message, wherever this API keeps it (``messages`` by default)."""
        messages = body.get("messages") or []
        if messages and isinstance(messages[-1], dict):
            content = messages[-1].get("content", "")
            if isinstance(content, list):  # content blocks
                return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            return str(content)
        return ""

    def success_body(self, answer: Answer) -> dict[str, Any]:
        """The API's answer body."""
        raise NotImplementedError

    def stream_frames(self, answer: Answer) -> list[bytes]:
        """The answer streamed as the API frames it, in order."""
        raise NotImplementedError

    def health_body(self) -> dict[str, Any]:
        raise NotImplementedError

    def error_status(self, status: int, overloaded: bool) -> int:
        """The status an overload is reported with (503 unless the family says otherwise)."""
        return 503 if overloaded else status

    def error_body(
        self, status: int, *, quota: str | None, retry_after_s: float | None, overloaded: bool
    ) -> dict[str, Any]:
        return {"error": error_message(status)}

    def retry_after_headers(self, seconds: float, fmt: str) -> dict[str, str]:
        """Retry-After as the API sends it: delay-seconds (with milliseconds when the scaled
        delay is not whole), an HTTP-date, or ``retry-after-ms`` alone."""
        if fmt == "date":
            return {"retry-after": formatdate(time.time() + seconds, usegmt=True)}
        headers = {"retry-after-ms": str(int(round(seconds * 1000)))} if fmt == "ms" else {}
        if fmt == "seconds":
            whole = math.ceil(seconds)
            headers["retry-after"] = str(whole)
            if whole != seconds:  # a scaled delay below a second: the precise value too
                headers["retry-after-ms"] = str(int(round(seconds * 1000)))
        return headers

    def rate_limit_headers(self, window: RateWindow) -> dict[str, str]:
        """The rate-limit headers of an answer (none unless the family sends them)."""
        return {}

    def header_refusal(self, headers: dict[str, str]) -> Refused | None:
        """A refusal for a header the API requires on every request (none by default)."""
        return None

    def format_refusal(
        self,
        fields: dict[str, Any],
        response_formats: Sequence[str] | None,
        status: int,
        emulate: str | None,
    ) -> Refused | None:
        """A refusal of the chat body's structured-output request, for a server scripted to
        take only some of them (none unless the family has such servers)."""
        return None

    def malformed_frame(self) -> bytes:
        """A chunk cut mid-JSON, in the family's framing."""
        return b'data: {"choices": [{"delta": {"content": "trunc\n\n'


def error_message(status: int) -> str:
    return f"fault server: scripted HTTP {status}"


def pieces(text: str, count: int = 8) -> list[str]:
    """``text`` cut into about ``count`` pieces (at least one, possibly empty)."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse(data: Any, event: str | None = None) -> bytes:
    encoded = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {encoded}\n\n".encode()


def utc_instant(delay_s: float = 0.0) -> str:
    """Now plus ``delay_s`` as an RFC 3339 UTC instant (seconds precision)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + delay_s))
