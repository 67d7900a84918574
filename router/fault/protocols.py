"""The wire formats the fault server speaks: one codec per API family, taken from the adapters
(each names its codec), and what the server asks of them — which family a request is for, what
the real API would refuse, and the family's bodies and frames.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from router.fault.codec import Answer, FaultCodec, Refused, Route
from router.providers.registry import ADAPTERS
from router.wire import extract_inputs


def _codecs() -> dict[str, FaultCodec]:
    codecs: dict[str, FaultCodec] = {}
    for adapter in ADAPTERS.values():
        codec = adapter.codec()
        codecs.setdefault(codec.protocol, codec)
    return codecs


CODECS: Mapping[str, FaultCodec] = MappingProxyType(_codecs())
"""Protocol name -> its codec."""
_FALLBACK = next(codec for codec in CODECS.values() if codec.fallback)
_BY_PATH = [codec for codec in CODECS.values() if not codec.fallback] + [_FALLBACK]
"""Routing order: the families whose paths are their own, then the fallback (OpenAI's
``/chat/completions`` and ``/models`` are suffixes of other families' paths)."""
KNOWN_FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {protocol: codec.known_fields for protocol, codec in CODECS.items()}
)
"""Top-level request fields each API documents; the conformance tests check these lists
against the official SDKs' request types."""


def codec_for(protocol: str) -> FaultCodec:
    return CODECS[protocol]


def route_for(
    method: str, api_path: str, body: Any, headers: dict[str, str] | None = None
) -> Route:
    """Which API and which endpoint a request (path below the provider prefix) is for."""
    fields = body if isinstance(body, dict) else {}
    for codec in _BY_PATH:
        route = codec.route(method, api_path, fields, headers or {})
        if route is not None:
            return route
    return Route("unknown", _FALLBACK.protocol)


def request_inputs(protocol: str, body: Any) -> dict[str, Any]:
    """The request's inputs block (DESIGN §7), from the last message wherever its API keeps it."""
    if not isinstance(body, dict):
        return {}
    return extract_inputs(CODECS[protocol].last_message_text(body))


def prompt_tokens(raw_body: bytes) -> int:
    return max(1, len(raw_body) // 4)


def refusal(
    protocol: str,
    route_kind: str,
    headers: dict[str, str],
    body: Any,
    needs_auth: bool,
    response_formats: Sequence[str] | None = None,
    format_refusal_status: int = 400,
    emulate: str | None = None,
) -> Refused | None:
    """What the real API would refuse this request with, or None.

    A missing key is a 401; a chat body that is not a JSON object, lacks a required field or
    has a top-level field the API does not define is a 400 naming the field. Emulating a
    particular server (``emulate``), unknown fields are ignored as that server's request model
    ignores them, and the family refuses a structured-output request as that server does.
    """
    codec = CODECS[protocol]
    auth = codec.auth_header
    if needs_auth and auth is not None and not headers.get(auth, "").strip():
        return Refused(401, f"missing {auth} header")
    refused = codec.header_refusal(headers)
    if refused is not None or route_kind != "chat":
        return refused
    if not isinstance(body, dict):
        return Refused(400, "the request body is not a JSON object")
    for name in codec.required_fields:
        if name not in body:
            return Refused(400, f"{name}: Field required")
    unknown = sorted(set(body) - codec.known_fields) if emulate is None else []
    if unknown:
        return Refused(400, f"{unknown[0]}: Extra inputs are not permitted")
    return codec.format_refusal(body, response_formats, format_refusal_status, emulate)


def success_body(
    protocol: str,
    model: str | None,
    answer: str | dict[str, Any],
    body: Any,
    input_tokens: int,
    serial: int,
    truncated: bool = False,
) -> dict[str, Any]:
    """The API's answer; ``truncated``: its first half, stopped at the output-token limit."""
    return CODECS[protocol].success_body(
        Answer(model or "fault-model", answer, body, input_tokens, serial, truncated)
    )


def stream_frames(
    protocol: str,
    model: str | None,
    answer: str | dict[str, Any],
    body: Any,
    input_tokens: int,
    serial: int,
    truncated: bool = False,
) -> list[bytes]:
    """A streamed answer as the API frames it: SSE events (NDJSON lines for Ollama), in order;
    ``truncated`` as in :func:`success_body`."""
    return CODECS[protocol].stream_frames(
        Answer(model or "fault-model", answer, body, input_tokens, serial, truncated)
    )
