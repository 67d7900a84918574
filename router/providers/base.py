"""What an adapter is: the wire format of one API family, separate from the transport.

An adapter turns a call into an :class:`HttpCall` (method, URL, headers, JSON)
and an API's JSON answer into content and usage; :mod:`router.providers.http`
sends it. Keeping the two apart lets the fault-server tests check each API's
request shape exactly, and keeps every adapter free of I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from router.capabilities import StructuredMode
from router.config import ProviderConfig
from router.models import ChatMessage, ChatRequest, Usage
from router.ratelimit_headers import RateLimitInfo
from router.streaming import Framing


@dataclass(frozen=True, slots=True)
class HttpCall:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    json: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CallSpec:
    """One chat call as the adapter sees it: the model and the final parameters."""

    task: str
    model: str
    messages: list[ChatMessage]
    response_schema: type[BaseModel] | None
    temperature: float | None
    max_tokens: int | None
    default_max_tokens: int  # for APIs that require max_tokens (Anthropic)
    structured: StructuredMode = "schema"


@dataclass(frozen=True, slots=True)
class ParsedChat:
    """What an answer says: its text, its token usage, and whether it stopped at the token limit."""

    content: str
    usage: Usage
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class ProviderReply:
    content: str
    usage: Usage
    rate_limits: RateLimitInfo = field(default_factory=RateLimitInfo)
    status: int = 200
    truncated: bool = False


class StreamEndedEarly(ValueError):
    """The streamed body ended before the API's own end marker: the answer was cut off."""


class StreamDecoder(ABC):
    """Reads one streamed answer, event by event, in one API's wire format.

    ``feed`` takes one SSE event (its ``event`` name, ``""`` when unnamed, and its ``data``)
    or one NDJSON line (event ``""``) and returns the text it adds. ``result`` is called when
    the body ends: it raises :class:`StreamEndedEarly` when the stream stopped before the API's
    own end marker (a cut stream must never pass as a complete answer).
    """

    @abstractmethod
    def feed(self, event: str, data: str) -> str: ...

    @abstractmethod
    def result(self) -> ParsedChat: ...


class Provider(Protocol):
    """A remote model endpoint the router can call. ``HttpProvider`` is the real one."""

    name: str
    kind: str

    @property
    def has_health_probe(self) -> bool: ...

    def key_problem(self) -> str | None: ...

    def structured_modes(self) -> Mapping[str, str]:
        """Per model, the structured-output mode learnt after a refusal (empty: none learnt)."""
        ...

    async def chat(self, spec: CallSpec, timeout_s: float) -> ProviderReply: ...

    async def health(self, timeout_s: float) -> RateLimitInfo: ...


class ProviderAdapter(ABC):
    kind: str
    framing: Framing = "sse"
    structured_modes: tuple[StructuredMode, ...] = ("schema", "json_object", "prompt")
    """The structured-output ladder this API offers, best first (see :data:`StructuredMode`)."""

    @abstractmethod
    def chat_call(
        self, cfg: ProviderConfig, spec: CallSpec, api_key: str | None, *, stream: bool = False
    ) -> HttpCall:
        """The request for one call; ``stream`` asks for the API's streamed form of the answer."""

    @abstractmethod
    def parse_chat(self, body: Any) -> ParsedChat:
        """Content and usage of a 2xx answer; raise ``KeyError``/``TypeError``/``ValueError`` on a foreign shape."""

    @abstractmethod
    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed answer."""

    @abstractmethod
    def health_call(self, cfg: ProviderConfig, api_key: str | None) -> HttpCall | None: ...

    @abstractmethod
    def rate_limits(
        self, headers: Mapping[str, str], body: Any, now_wall: float
    ) -> RateLimitInfo: ...


def is_reasoning_model(cfg: ProviderConfig, model: str) -> bool:
    """Whether ``model`` is a reasoning model: named in the provider's ``reasoning_models``, or an
    OpenAI o-series / GPT-5 name (Azure deployments have free names, so they must be listed)."""
    if model in cfg.reasoning_models:
        return True
    base = model.rsplit("/", 1)[-1].lower()
    return base.startswith(REASONING_PREFIXES)


REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def split_system(messages: list[ChatMessage]) -> tuple[str | None, list[ChatMessage]]:
    """System messages joined (for APIs with a separate system field) and the rest in order."""
    system = [m.content for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    return ("\n\n".join(system) if system else None), rest


def plain_messages(messages: list[ChatMessage]) -> list[dict[str, str]]:
    """``[{role, content}, ...]``, the message shape OpenAI, Anthropic and Ollama share."""
    return [{"role": m.role, "content": m.content} for m in messages]


def usage_of(input_tokens: Any, output_tokens: Any) -> Usage:
    def count(value: Any) -> int:
        return value if isinstance(value, int) and value >= 0 else 0

    return Usage(input_tokens=count(input_tokens), output_tokens=count(output_tokens))


def spec_from_request(
    req: ChatRequest,
    model: str,
    messages: list[ChatMessage],
    default_max_tokens: int,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> CallSpec:
    return CallSpec(
        task=req.task,
        model=model,
        messages=messages,
        response_schema=req.response_schema,
        temperature=req.temperature if req.temperature is not None else temperature,
        max_tokens=req.max_tokens if req.max_tokens is not None else max_tokens,
        default_max_tokens=default_max_tokens,
    )
