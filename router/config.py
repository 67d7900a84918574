"""The router's part of the config file, and providers from environment variables alone.

File shape (under the top-level ``router:`` key of config.yaml)::

    router:
      providers:
        - name: openai
          kind: openai            # one of router.providers.registry.KINDS
          models: {1: gpt-4.1-mini, 2: gpt-4.1}
          api_key_env: OPENAI_API_KEY   # the variable's NAME; the key itself never enters config
          bulkhead: 10
          rpm: 500
          tpm: 200000
      profiles:
        careful: {provider: openai, model: gpt-4.1, temperature: 0}
      policy:
        max_attempts: 4

Keys are read from the environment at request time; config objects hold only
the variable name, so no repr, dump, snapshot or error can contain a key.
Every validation problem becomes one :class:`ConfigError` line naming the
file and the key and what to do — never a traceback, never the offending
value (it might be a pasted key).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

from plumbing.answer_bound import MAX_ANSWER_CHARS
from plumbing.network import is_loopback
from plumbing.yaml_reading import read_yaml_file
from router.breaker import BreakerPolicy
from router.local import BUILTIN_NAME
from router.models import ContextLimit
from router.providers.registry import ADAPTERS, kinds_phrase

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PROVIDER_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")


class ConfigError(ValueError):
    """A config problem, as one line: ``file: key: problem — what to do``."""


class ModelPrice(BaseModel):
    """What a model costs, in USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


# List prices (USD per million input/output tokens) of the models the environment defaults
# use; a provider's ``prices`` entry overrides them. Unknown models cost nothing (shown as 0).
_LIST_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "openai/gpt-4.1-mini": (0.40, 1.60),
    "openai/gpt-4.1": (2.00, 8.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4-1": (15.00, 75.00),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.00),
}
DEFAULT_PRICES: dict[str, ModelPrice] = {
    model: ModelPrice(input_per_mtok=i, output_per_mtok=o) for model, (i, o) in _LIST_PRICES.items()
}


# Context windows (tokens) of the models the environment defaults use; a provider's
# ``context_windows`` entry overrides them. A model with no known window is not checked.
DEFAULT_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1": 1_047_576,
    # GitHub Models' free tier takes at most 8,000 input tokens a request, whatever the model
    "openai/gpt-4.1-mini": 8_000,
    "openai/gpt-4.1": 8_000,
    "claude-haiku-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-opus-4-1": 200_000,
    "gemini-2.5-flash-lite": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    # what Ollama serves by default (its num_ctx), not the model's trained 128k
    "llama3.2": 4_096,
}
DEFAULT_CHARS_PER_TOKEN = 2.0
"""Characters per token when checking a context window: half the usual four, because small
models' tokenizers (and JSON in any tokenizer) produce about twice the tokens of that estimate."""


class ProviderConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: str
    """The provider's API family and vendor: a kind of :data:`router.providers.registry.KINDS`."""
    base_url: str | None = None
    models: dict[int, str] = Field(default_factory=dict)
    api_key_env: str | None = None
    api_version: str | None = None
    bulkhead: int = Field(default=10, ge=1, le=10_000)
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    """The longest one call may take in all (the request's own deadline may cut it shorter)."""
    connect_timeout_s: float = Field(default=5.0, gt=0)
    """Opening the connection (TCP + TLS): a blackholed host costs this, not ``timeout_s``."""
    read_timeout_s: float = Field(default=120.0, gt=0)
    """The longest silence while reading the answer — for a non-streamed answer, the generation."""
    write_timeout_s: float = Field(default=10.0, gt=0)
    pool_timeout_s: float = Field(default=5.0, gt=0)
    """Waiting for a free connection of the shared client."""
    first_byte_timeout_s: float = Field(default=30.0, gt=0)
    """Streams: the longest wait for the first token."""
    idle_timeout_s: float = Field(default=30.0, gt=0)
    """Streams: the longest silence between two chunks."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """USD per million tokens by model name; shipped defaults cover the default models."""
    context_windows: dict[str, PositiveInt] = Field(default_factory=dict)
    """Context window (tokens, prompt and answer together) by model name; shipped defaults cover
    the default models. A request that would not fit is not sent to that model."""
    chars_per_token: float = Field(default=DEFAULT_CHARS_PER_TOKEN, gt=0)
    """Characters one token of this provider's models holds, for the context-window check."""
    weight: float = Field(default=1.0, ge=0)
    probe: Literal["health", "request"] = "health"
    enabled: bool = True
    reasoning_models: list[str] = Field(default_factory=list)
    """Models (Azure: deployments) that are reasoning models: sent ``max_completion_tokens`` and no
    ``temperature``. OpenAI's o-series and GPT-5 names are recognised without being listed."""
    stream_first_byte_s: float = Field(default=30.0, gt=0)
    """A streamed call fails (TIMEOUT) when its first event takes longer than this."""
    stream_idle_s: float = Field(default=30.0, gt=0)
    """A streamed call fails (TIMEOUT) when it stalls this long between two events."""
    trickle_timeout_s: float = Field(default=10.0, gt=0)
    """Once a line of a stream (or a non-streamed body) has begun, the longest its rest may take:
    a server that trickles its answer a byte at a time fails (TIMEOUT) after this. Real servers
    send each line whole, in milliseconds."""
    max_body_mb: float = Field(default=16.0, gt=0)
    """The largest non-streamed body read (an error's and a health check's too), in MiB once
    inflated: a real answer of 128k tokens is ~1 MiB, a long model list a few. Past it the call
    fails as OVERSIZED (router/bounded_read.py)."""
    max_line_mb: float = Field(default=4.0, gt=0)
    """The longest line of a streamed answer, in MiB once inflated: real events are under 1 KiB;
    a server that sends a whole long answer as one event needs ~1 MiB."""
    max_stream_mb: float = Field(default=64.0, gt=0)
    """The most bytes of one streamed answer, in MiB once inflated, comments and keep-alives
    included: a 128k-token answer in ~350-byte events is ~45 MiB."""
    max_answer_chars: int = Field(default=MAX_ANSWER_CHARS, ge=1, le=MAX_ANSWER_CHARS)
    """The longest answer text kept, streamed or not (plumbing/answer_bound.py: the engine's live
    view holds no more, so it cannot be raised past that)."""
    allow_insecure_http: bool = False
    """Send the key over plain ``http://`` to a host other than this machine (a network you
    trust); refused otherwise, so a mistyped scheme never puts a key on the wire in clear."""

    @model_validator(mode="before")
    @classmethod
    def _defaults_by_kind(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        kind = data.get("kind")
        if "api_key_env" not in data and isinstance(kind, str) and kind in ADAPTERS:
            data["api_key_env"] = ADAPTERS[kind].key_env
        if "model" in data:  # shorthand: one model for tiers 1-3
            model = data.pop("model")
            if "models" not in data and isinstance(model, str):
                data["models"] = {1: model, 2: model, 3: model}
            elif not isinstance(model, str):
                raise ValueError("model must be a model name (text)")
        return data

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value not in ADAPTERS:
            raise ValueError(f"Input should be {kinds_phrase()}")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _PROVIDER_NAME.fullmatch(value):
            raise ValueError("use lower-case letters, digits, '-' and '_' (e.g. openai, azure-eu)")
        if value == BUILTIN_NAME:
            raise ValueError("'builtin' is reserved for the built-in provider; choose another name")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                "not the key itself; export the key in that variable"
            )
        return value

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        example = "an http(s) URL such as https://api.openai.com/v1"
        try:
            parts = urlsplit(value)
            port = parts.port  # raises on a port outside 0-65535 or not a number
        except ValueError:
            raise ValueError(f"is not a valid URL — use {example}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"must be {example}")
        if port == 0:
            raise ValueError("port 0 cannot be connected to — use a port from 1 to 65535")
        if any(ch.isspace() for ch in value):
            raise ValueError(f"must not contain spaces — use {example}")
        if parts.username or parts.password or parts.query:
            raise ValueError("must not carry credentials or a query string; keys go in api_key_env")
        return value.rstrip("/")

    @field_validator("models")
    @classmethod
    def _models(cls, value: dict[int, str]) -> dict[int, str]:
        for tier, model in value.items():
            if tier < 1:
                raise ValueError(
                    "tiers are whole numbers from 1 (1 = basic, higher = more capable)"
                )
            if not model.strip():
                raise ValueError(f"tier {tier} has an empty model name")
        return value

    @model_validator(mode="after")
    def _complete(self) -> ProviderConfig:
        if not self.models:
            raise ValueError("needs models: {1: <model>, ...} (or model: <name> for every tier)")
        adapter = ADAPTERS[self.kind]
        if adapter.default_base_url is None and self.base_url is None:
            raise ValueError(f"an {self.kind} provider needs base_url: {adapter.base_url_example}")
        parts = urlsplit(self.resolved_base_url)
        host = parts.hostname or ""
        if (
            parts.scheme == "http"
            and self.api_key_env
            and not self.allow_insecure_http
            and not is_loopback(host)
        ):
            raise ValueError(
                f"provider {self.name!r} would send its key (${self.api_key_env}) in clear over"
                f" http to {host}; use https, or set allow_insecure_http: true for a network"
                " you trust"
            )
        return self

    @property
    def resolved_base_url(self) -> str:
        return self.base_url or ADAPTERS[self.kind].default_base_url or ""

    @property
    def resolved_api_version(self) -> str:
        return self.api_version or ADAPTERS[self.kind].default_api_version

    def model_for(self, tier: int) -> str | None:
        return self.models.get(tier)

    def context_limit(self, model: str) -> ContextLimit | None:
        """``model``'s configured or default context window, else None (not checked)."""
        tokens = self.context_windows.get(model) or DEFAULT_CONTEXT_WINDOWS.get(model)
        if tokens is None:
            return None
        return ContextLimit(model=model, tokens=tokens, chars_per_token=self.chars_per_token)

    def price_of(self, model: str) -> ModelPrice | None:
        """The configured price of ``model``, else the shipped default, else ``None`` (unknown)."""
        return self.prices.get(model) or DEFAULT_PRICES.get(model)


class ProfileConfig(BaseModel):
    """A named model choice (``ChatRequest.profile``): tried first, then the request's tier chain."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)


class RouterPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    consecutive_failures: int = Field(default=5, ge=1)
    failure_window_calls: int = Field(default=20, ge=1)
    failure_window_min_calls: int = Field(default=10, ge=1)
    failure_window_s: float = Field(default=60.0, gt=0)
    failure_rate: float = Field(default=0.5, gt=0, le=1)
    cooldown_failure_s: float = Field(default=30.0, ge=0)
    cooldown_rate_limit_s: float = Field(default=120.0, ge=0)
    cooldown_timeout_s: float = Field(default=60.0, ge=0)
    cooldown_quota_s: float = Field(default=600.0, ge=0)
    cooldown_multiplier: float = Field(default=1.5, ge=1)
    max_cooldown_s: float = Field(default=600.0, gt=0)
    max_retry_after_s: float = Field(default=3600.0, gt=0)
    probe_lease_s: float = Field(default=15.0, gt=0)
    probe_timeout_s: float = Field(default=10.0, gt=0)
    probe_min_s: float = Field(default=1.0, gt=0)
    probe_backoff_ratio: float = Field(default=0.2, ge=0)
    bad_answer_strikes: int = Field(default=5, ge=1)
    throttle_k: float = Field(default=2.0, gt=0)
    throttle_window_s: float = Field(default=120.0, gt=0)
    max_attempts: int = Field(default=4, ge=1)
    request_timeout_s: float = Field(default=120.0, gt=0)
    capacity_wait_s: float = Field(default=10.0, ge=0)
    shed_threshold: float = Field(default=0.5, ge=0, le=1)
    shed_medium_concurrency: int = Field(default=4, ge=1)
    shed_queue_size: int = Field(default=32, ge=0)
    shed_queue_wait_s: float = Field(default=10.0, ge=0)
    default_output_tokens: int = Field(default=512, ge=1)
    recency_tau_s: float = Field(default=120.0, gt=0)
    builtin_concurrency: int = Field(default=8, ge=1)
    builtin_in_thread: bool = True
    stats_flush_s: float = Field(default=1.0, gt=0)
    shared_state_poll_s: float = Field(default=0.5, gt=0)

    def breaker_policy(self) -> BreakerPolicy:
        return BreakerPolicy(
            consecutive_failures=self.consecutive_failures,
            window_calls=self.failure_window_calls,
            window_min_calls=self.failure_window_min_calls,
            window_s=self.failure_window_s,
            failure_rate=self.failure_rate,
            cooldown_failure_s=self.cooldown_failure_s,
            cooldown_rate_limit_s=self.cooldown_rate_limit_s,
            cooldown_timeout_s=self.cooldown_timeout_s,
            cooldown_quota_s=self.cooldown_quota_s,
            cooldown_misconfigured_s=self.max_cooldown_s,
            multiplier=self.cooldown_multiplier,
            max_cooldown_s=self.max_cooldown_s,
            max_retry_after_s=self.max_retry_after_s,
            probe_lease_s=self.probe_lease_s,
            probe_min_s=self.probe_min_s,
            probe_backoff_ratio=self.probe_backoff_ratio,
        )


class RouterConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    providers: list[ProviderConfig] = Field(default_factory=list)
    profiles: dict[str, ProfileConfig] = Field(default_factory=dict)
    policy: RouterPolicy = Field(default_factory=RouterPolicy)

    @model_validator(mode="after")
    def _references(self) -> RouterConfig:
        names = [p.name for p in self.providers]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"provider name {duplicates[0]!r} is used twice; names must be unique")
        for profile_name, profile in self.profiles.items():
            if profile.provider not in names:
                raise ValueError(
                    f"profile {profile_name!r} names provider {profile.provider!r}, "
                    "which is not configured; add it under router.providers"
                )
        return self

    def enabled_providers(self) -> list[ProviderConfig]:
        return [p for p in self.providers if p.enabled]


# --- loading ---------------------------------------------------------------------------


def _key_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after[_complete()]", "function-before[_defaults_by_kind()]"):
            continue
        else:
            path += f".{part}" if path else str(part)
    return path


def _first_error(exc: ValidationError, source: str, prefix: str) -> ConfigError:
    errors = exc.errors(include_input=False, include_url=False)
    first = errors[0]
    loc = tuple(
        p
        for p in first["loc"]
        if not (isinstance(p, str) and p.startswith(("function-", "literal[")))
    )
    key = _key_path(prefix, loc)
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        field = str(loc[-1]) if loc else ""
        if field in ("api_key", "key", "token", "password", "secret"):
            message = "keys never go in the config file: export the key in an environment variable and set api_key_env"
        else:
            message = "unknown key — remove it or check its spelling"
    elif first["type"] == "missing":
        message = "is required — add it"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return ConfigError(f"{source}: {key}: {message}{more}")


def parse_router_config(section: Any, source_name: str, key_prefix: str = "router") -> RouterConfig:
    """Validate the router section (a mapping, or ``None`` for an empty one)."""
    if section is None:
        section = {}
    if not isinstance(section, Mapping):
        raise ConfigError(
            f"{source_name}: {key_prefix}: must be a mapping of providers/profiles/policy"
        )
    try:
        return RouterConfig.model_validate(dict(section))
    except ValidationError as exc:
        raise _first_error(exc, source_name, key_prefix) from None


def load_router_config(
    path_or_mapping: Path | str | Mapping[str, Any], source_name: str | None = None
) -> RouterConfig:
    """The router config from a config file's ``router:`` key, or from a mapping that *is* the router section."""
    if isinstance(path_or_mapping, Mapping):
        return parse_router_config(path_or_mapping, source_name or "<config>")
    path = Path(path_or_mapping)
    name = source_name or str(path)
    data = read_yaml_file(path, name, ConfigError, "create it or point to an existing config file")
    if data is None:
        return RouterConfig()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{name}: the top level must be a mapping with a router: key")
    return parse_router_config(data.get("router"), name)


# --- environment ---------------------------------------------------------------------------


def router_config_from_env(
    environ: Mapping[str, str], policy: RouterPolicy | None = None
) -> RouterConfig:
    """Providers from the usual environment variables (each kind's adapter says which make one);
    with none set, only the built-in provider serves.

    Only variable *names* go into the config; the keys stay in the environment.
    """
    providers = [
        entry
        for adapter in ADAPTERS.values()
        if (entry := adapter.from_environment(environ)) is not None
    ]
    section: dict[str, Any] = {"providers": providers}
    if policy is not None:
        section["policy"] = policy.model_dump()
    return parse_router_config(section, "environment")


def effective_router_config(
    file_config: RouterConfig | None, environ: Mapping[str, str]
) -> RouterConfig:
    """Providers from the file when it lists any, otherwise from the environment (with the file's policy/profiles)."""
    if file_config is not None and file_config.providers:
        return file_config
    from_env = router_config_from_env(environ)
    if file_config is None:
        return from_env
    try:
        return RouterConfig(
            providers=from_env.providers, profiles=file_config.profiles, policy=file_config.policy
        )
    except ValidationError as exc:
        raise _first_error(exc, "config + environment", "router") from None
