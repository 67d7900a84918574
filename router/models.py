"""The router's public data shapes: requests, responses, attempts and provider snapshots.

These cross the package boundary (research builds requests, the TUI renders
snapshots), so they are frozen pydantic models that reject unknown fields.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Priority = Literal["low", "medium", "high"]
Role = Literal["system", "user", "assistant"]


class BreakerState(StrEnum):
    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


class ChatMessage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str


class ChatRequest(BaseModel):
    """One model call. ``task`` names the job so the built-in provider can answer it."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    task: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    inputs: dict[str, Any] = Field(default_factory=dict)
    response_schema: type[BaseModel] | None = None
    tier: int = Field(default=1, ge=1)
    profile: str | None = None
    priority: Priority = "medium"
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    timeout_s: float | None = Field(default=None, gt=0.0)

    @field_validator("response_schema")
    @classmethod
    def _schema_is_model(cls, value: type[BaseModel] | None) -> type[BaseModel] | None:
        if value is not None and not (isinstance(value, type) and issubclass(value, BaseModel)):
            raise ValueError("response_schema must be a pydantic BaseModel subclass")
        return value


class ContextLimit(BaseModel):
    """A model's context window (prompt and answer together, in tokens) and how many characters
    one token of its tokenizer holds on average, to estimate a prompt's tokens before sending it.
    The estimate errs long: going past a window fails the call or silently drops the prompt's
    start (Ollama), while a prompt trimmed a little more than needed costs little."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    tokens: int = Field(ge=1)
    chars_per_token: float = Field(gt=0)

    def tokens_of(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)

    def prompt_chars(self, output_tokens: int) -> int:
        """The characters of prompt that fit beside an answer of ``output_tokens``."""
        return max(0, int((self.tokens - output_tokens) * self.chars_per_token))


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


AttemptOutcome = Literal["ok", "failed", "skipped", "probe_ok", "probe_failed"]


class Attempt(BaseModel):
    """One step of a request's way through the chain: a call made, a probe, or a provider passed over."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    model: str | None = None
    tier: int | None = None
    outcome: AttemptOutcome
    error_class: str | None = None
    status: int | None = None
    latency_s: float = 0.0
    cost_usd: float = 0.0
    detail: str = ""


class ChatResponse(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str
    parsed: Any | None = None
    provider: str
    model: str
    tier: int = 0
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    degraded: bool = False
    """Not the answer asked for: a lower tier's model, or the built-in provider while remote ones
    are configured. ``fallback`` says which."""
    fallback: bool = False
    """Answered by the built-in (offline) provider although remote providers are configured."""
    cost_usd: float = 0.0
    """What the request cost (every attempt that produced tokens) at the models' configured or
    default prices; 0 for models with no known price."""
    attempts: list[Attempt] = Field(default_factory=list)
    truncated: bool = False
    """The model stopped at its output-token limit (OpenAI ``finish_reason: length``, Anthropic
    ``stop_reason: max_tokens``, Gemini ``MAX_TOKENS``): the answer may be cut short; a caller
    can ask again with more room. A cut answer that does not match the response schema comes
    back with ``parsed=None`` rather than as the provider's failure."""


class RouterTotals(BaseModel):
    """What this router answered since it started: the figures a run's summary shows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: int = 0
    remote: int = 0
    """Answered by a configured provider at the tier asked for."""
    lower_tier: int = 0
    """Answered by a configured provider, but by a lower tier's model (``degraded``)."""
    fallback: int = 0
    """Answered by the built-in provider while remote providers are configured (``degraded``)."""
    builtin: int = 0
    """Answered by the built-in provider with no remote provider configured (not degraded)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def degraded(self) -> int:
        return self.lower_tier + self.fallback


class ProviderSnapshot(BaseModel):
    """Everything the providers panel and ``workbench providers`` show about one provider.

    ``degraded`` means up but not at full service: not CLOSED, throttling, or
    waiting on a rate-limit bucket. Times are seconds; ``changed_wall`` is
    epoch seconds, for display only. ``cooldown_remaining_s`` counts down to the
    next probe; ``cooldown_ceiling_s`` is the ADR-002 cooldown of the current trip.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: str
    state: BreakerState
    cooldown_remaining_s: float = 0.0
    cooldown_ceiling_s: float = 0.0
    consecutive_trips: int = 0
    success_rate: float | None = None
    health_score: float = 1.0
    ema_latency_s: float | None = None
    p50_latency_s: float | None = None
    p95_latency_s: float | None = None
    p99_latency_s: float | None = None
    recent_latencies_s: list[float] = Field(default_factory=list)
    rpm_remaining: int | None = None
    rpm_limit: int | None = None
    tpm_remaining: int | None = None
    tpm_limit: int | None = None
    bucket_eta_s: float = 0.0
    in_flight: int = 0
    bulkhead_size: int = 0
    throttle_reject_p: float = 0.0
    requests_total: int = 0
    successes_total: int = 0
    failures_total: int = 0
    degraded: bool = False
    misconfigured: bool = False
    misconfigured_reason: str | None = None
    last_error: str | None = None
    last_error_status: int | None = None
    last_error_retry_after_s: float | None = None
    """The Retry-After the last failed answer carried (seconds), if it carried one."""
    open_reason: str | None = None
    """Why the breaker is OPEN or HALF_OPEN (the trip's error class or failure count); None
    when CLOSED."""
    changed_wall: float | None = None
    models: dict[int, str] = Field(default_factory=dict)
    unhealthy_models: dict[str, str] = Field(default_factory=dict)
    """Models taken out of traffic for answering 4xx or invalid output to many requests."""
    cost_usd_total: float = 0.0
    fallback_total: int = 0
    """Built-in provider only: answers it gave in place of a configured remote provider."""
    structured_output: dict[str, str] = Field(default_factory=dict)
    """Per model, the structured-output mode learnt after the server refused a better one
    (``json_object`` or ``prompt``); models absent here take the API's schema mode."""
