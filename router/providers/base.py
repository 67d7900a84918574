"""What an adapter is: everything the router knows of one provider kind, separate from the transport.

An adapter turns a call into an :class:`HttpCall` (method, URL, headers, JSON)
and an API's JSON answer into content and usage; :mod:`router.providers.http`
sends it. Keeping the two apart lets the fault-server tests check each API's
request shape exactly, and keeps every adapter free of I/O.

An adapter owns its kind: besides the wire format it carries the kind's default base URL,
the environment variable of its key, how it finds itself in the environment, its rate-limit
header parser, its error-classification hook and the fault-server codec that plays its API.
:mod:`router.providers.registry` finds every adapter in :mod:`router.providers.adapters`;
nothing else branches on a kind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel

from router.errors import ErrorClass
from router.fault.codec import FaultCodec
from router.models import ChatMessage, ChatRequest, Usage
from router.ratelimit_headers import RateLimitInfo

StructuredMode = Literal["schema", "json_object", "prompt"]
"""How a response schema is asked for, best first: the API's schema-constrained output, its
plain JSON mode with the schema in the prompt, or the schema in the prompt alone (then parsed)."""
Framing = Literal["sse", "ndjson"]
"""How a streamed body is cut into events: server-sent events, or one JSON object a line."""


class Endpoint(Protocol):
    """What an adapter reads of a provider's configuration (``router.config.ProviderConfig``)."""

    @property
    def resolved_base_url(self) -> str: ...

    @property
    def resolved_api_version(self) -> str: ...

    @property
    def reasoning_models(self) -> list[str]: ...


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
    """One provider kind. The class attributes are the kind's facts; the methods its wire format."""

    kind: ClassVar[str]
    """The name config files use (``kind: openai``)."""
    listed_at: ClassVar[int]
    """Where the kind stands in lists of kinds: the config error naming the kinds, and the
    order of the providers found in the environment."""
    codec: ClassVar[type[FaultCodec]]
    """The fault server's side of this kind's API (router/fault/codecs/)."""
    default_base_url: ClassVar[str | None] = None
    """``None``: a provider of this kind must name its ``base_url``."""
    base_url_example: ClassVar[str] = "https://host/path"
    """What a ``base_url`` of this kind looks like, for the message asking for one."""
    key_env: ClassVar[str | None] = None
    """The environment variable holding the key when config names none (``None``: no key)."""
    default_api_version: ClassVar[str] = ""
    env_models: ClassVar[dict[int, str]] = {}
    """The models, by tier, of a provider of this kind made from its key's environment variable
    alone (empty: the environment does not make one)."""
    env_bulkhead: ClassVar[int] = 10
    demo_prefix: ClassVar[str | None] = None
    """The fault server's path prefix that plays this kind in a demo config (default: the kind)."""
    framing: Framing = "sse"
    structured_modes: tuple[StructuredMode, ...] = ("schema", "json_object", "prompt")
    """The structured-output ladder this API offers, best first (see :data:`StructuredMode`)."""

    @abstractmethod
    def chat_call(
        self, cfg: Endpoint, spec: CallSpec, api_key: str | None, *, stream: bool = False
    ) -> HttpCall:
        """The request for one call; ``stream`` asks for the API's streamed form of the answer."""

    @abstractmethod
    def parse_chat(self, body: Any) -> ParsedChat:
        """Content and usage of a 2xx answer; raise ``KeyError``/``TypeError``/``ValueError`` on a foreign shape."""

    @abstractmethod
    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed answer."""

    @abstractmethod
    def health_call(self, cfg: Endpoint, api_key: str | None) -> HttpCall | None: ...

    @abstractmethod
    def rate_limits(self, headers: Mapping[str, str], body: Any, now_wall: float) -> RateLimitInfo:
        """The kind's rate-limit signals (headers, and the error body for some APIs)."""

    def classify_error(
        self, status: int, body: Any, rate_limits: RateLimitInfo
    ) -> ErrorClass | None:
        """The error class of a non-2xx answer where this kind departs from the shared rules
        (router/classify.py), which decide when this returns ``None`` (the default)."""
        return None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> dict[str, Any] | None:
        """The provider entry (a ``router.providers`` item) the environment's variables make
        of this kind, or ``None``. By default: one named after the kind, with
        :attr:`env_models`, when :attr:`key_env` is set."""
        if not cls.env_models or cls.key_env is None or not is_set(environ, cls.key_env):
            return None
        return {
            "name": cls.kind,
            "kind": cls.kind,
            "api_key_env": cls.key_env,
            "models": dict(cls.env_models),
            "bulkhead": cls.env_bulkhead,
        }


def is_set(environ: Mapping[str, str], name: str) -> bool:
    """Whether the environment variable ``name`` holds something (blank counts as unset)."""
    return bool(environ.get(name, "").strip())


def is_reasoning_model(cfg: Endpoint, model: str) -> bool:
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
