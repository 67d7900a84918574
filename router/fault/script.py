"""The fault server's script: what each provider path prefix does, request by request or phase by phase.

YAML shape::

    time_scale: 1.0                  # optional; --time-scale overrides it
    providers:
      openai:                        # serves http://127.0.0.1:PORT/openai/...
        sequence:                    # one entry per chat request, in order...
          - {status: 429, retry_after_s: 8}
          - {status: 503, count: 5}  # count repeats an entry
          - ok
        then: ok                     # ...and this once the sequence is used up (default ok)
      anthropic:
        phases:                      # or by time since the server started (script seconds)
          - {for_s: 20, fault: ok}
          - {for_s: 10, fault: overloaded}
        repeat: true                 # cycle the phases: flapping
      gemini: {fault: down}          # one fault for every request: always down
      ollama:
        latency_s: 0.2               # added before every answer
        limits: {rpm: 30, tpm: 20000}   # real windowed limits, reported in rate-limit headers
        health: ok                   # health endpoint: "follow" (default) mirrors the current fault

Fault shorthands: ``ok``, ``down``, ``timeout``, ``slow`` (slow body), ``malformed`` (invalid
JSON with 200), ``rate_limit`` (429, Retry-After 2 s), ``overloaded`` (529 for Anthropic,
503 elsewhere), ``quota`` (429 for a spent quota, no Retry-After), or a bare status code.
Mid-stream faults act on a streamed answer after half its chunks: ``cut`` (the connection
closes), ``stall`` (the stream hangs ``hang_s``), ``bad_chunk`` (a chunk of broken JSON),
``hold`` (the stream waits until the caller of the server releases it, then finishes: a test
sees the partial answer for as long as it needs, with no timing involved); on a request that
does not stream they cut, hang or garble the body the same way, and hold it before it
begins (a body once begun must not pause: ``trickle_timeout_s``). ``truncated``
answers the first half of the answer, stopped at the output-token limit as the API says it
(OpenAI ``finish_reason: length``, Anthropic ``stop_reason: max_tokens``, Gemini
``MAX_TOKENS``, Ollama ``done_reason: length``).

Hostile answers (router/fault/hostile.py), from a malicious server: ``endless`` (a stream or
body that never ends), ``huge`` (an answer of ``size_mb`` MiB of text, streamed as one line; a
health check's model list padded as much), ``bomb`` (``huge`` of 1 GiB, gzip-compressed to
~1 MB), ``trickle`` (a byte every ``every_s``), ``comments`` (SSE comments for ever, no event),
``bad_utf8`` (text that is not UTF-8), ``endless_head`` (header lines for ever).
``encoding: gzip | deflate`` compresses any answer and ``text`` replaces the responder's answer
(escape sequences from a script, say). A health check gets one when ``health:`` names it
(``health: bomb``). An ``error`` fault of a 3xx status with a ``location`` header is a redirect.

``auth: required`` refuses with a 401, as the real API does, a request without the API's key
header (``Authorization``, ``api-key``, ``x-api-key``, ``x-goog-api-key``); the default ``none``
takes keyless requests, as a local server does and as the demos need.

``response_formats`` (OpenAI-compatible paths): the ``response_format`` types the server
accepts, e.g. ``[text, json_object]`` for llama.cpp's server, which refuses ``json_schema``
with ``format_refusal_status`` and a message naming ``response_format``.
``emulate: llama_cpp_python`` plays llama-cpp-python's server as it really answers: unknown
top-level fields ignored, ``json_schema`` refused with a 500 whose body is FastAPI's validation
error text in an ``internal_server_error`` envelope (``response_formats`` defaults to
``[text, json_object]`` there).
A mapping sets ``kind``/``status`` and the details. Every duration is in script seconds; the
time scale multiplies all of them, Retry-After included.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from plumbing.yaml_reading import read_yaml_file

FaultKind = Literal[
    "ok",
    "error",
    "timeout",
    "slow_body",
    "malformed",
    "down",
    "stream_cut",
    "stream_stall",
    "stream_malformed",
    "stream_hold",
    "truncated",
    "endless",
    "huge",
    "trickle",
    "comments",
    "bad_utf8",
    "endless_head",
]

_SHORTHANDS: dict[str, dict[str, Any]] = {
    "ok": {"kind": "ok"},
    "down": {"kind": "down"},
    "timeout": {"kind": "timeout"},
    "slow": {"kind": "slow_body"},
    "slow_body": {"kind": "slow_body"},
    "malformed": {"kind": "malformed"},
    "rate_limit": {"kind": "error", "status": 429, "retry_after_s": 2.0},
    "overloaded": {"kind": "error", "status": 529, "overloaded": True},
    "quota": {"kind": "error", "status": 429, "quota": "spend"},
    "cut": {"kind": "stream_cut"},
    "stall": {"kind": "stream_stall"},
    "bad_chunk": {"kind": "stream_malformed"},
    "hold": {"kind": "stream_hold"},
    "truncated": {"kind": "truncated"},
    "endless": {"kind": "endless"},
    "huge": {"kind": "huge"},
    "bomb": {"kind": "huge", "size_mb": 1024.0, "encoding": "gzip"},
    "trickle": {"kind": "trickle", "every_s": 0.2},
    "comments": {"kind": "comments"},
    "bad_utf8": {"kind": "bad_utf8"},
    "endless_head": {"kind": "endless_head"},
}


def _expand_shorthand(data: Any) -> Any:
    """A fault given as a name or a status code, as the mapping it stands for."""
    if isinstance(data, bool):
        raise ValueError(
            "a fault is a name (ok, down, timeout, slow, malformed, rate_limit, overloaded, "
            "quota, cut, stall, bad_chunk, hold, truncated, endless, huge, bomb, trickle, "
            "comments, bad_utf8, endless_head), a status code, or a mapping"
        )
    if isinstance(data, int):
        return {"kind": "ok"} if 200 <= data < 300 else {"kind": "error", "status": data}
    if isinstance(data, str):
        text = data.strip().lower()
        if text.isdigit():
            return _expand_shorthand(int(text))
        if text not in _SHORTHANDS:
            raise ValueError(
                f"unknown fault {data!r}; use one of {', '.join(_SHORTHANDS)} or a status code"
            )
        return dict(_SHORTHANDS[text])
    if isinstance(data, Mapping) and "kind" not in data and "status" in data:
        return {**data, "kind": "error"}
    if isinstance(data, Mapping) and isinstance(data.get("kind"), str):
        alias = _SHORTHANDS.get(data["kind"].strip().lower())
        if alias is not None:  # {kind: stall, hang_s: 5}: a shorthand with details
            return {**alias, **{k: v for k, v in data.items() if k != "kind"}}
    return data


class FaultScriptError(ValueError):
    """A script problem as one line: ``file: key: problem — what to do``."""


class Fault(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FaultKind = "ok"
    status: int | None = Field(default=None, ge=100, le=599)
    retry_after_s: float | None = Field(default=None, ge=0)
    retry_after_format: Literal["seconds", "date", "ms"] = "seconds"
    quota: Literal["spend", "daily"] | None = None
    overloaded: bool = False
    headers: dict[str, str] = Field(default_factory=dict)
    delay_s: float = Field(default=0.0, ge=0)
    hang_s: float = Field(default=30.0, ge=0)
    duration_s: float = Field(default=3.0, ge=0)
    count: int = Field(default=1, ge=1)
    size_mb: float = Field(default=64.0, gt=0)
    every_s: float = Field(default=0.0, ge=0)
    encoding: Literal["identity", "gzip", "deflate"] = "identity"
    text: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return _expand_shorthand(data)

    @model_validator(mode="after")
    def _status_for_errors(self) -> Fault:
        if self.kind == "error" and (self.status is None or self.status < 300):
            raise ValueError("an error fault needs status: 3xx, 4xx or 5xx")
        return self


class Phase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    for_s: float = Field(gt=0)
    fault: Fault = Field(default_factory=Fault)


class Limits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)


class ProviderScript(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    fault: Fault | None = None
    sequence: list[Fault] = Field(default_factory=list)
    then: Fault = Field(default_factory=Fault)
    phases: list[Phase] = Field(default_factory=list)
    repeat: bool = False
    health: Literal["follow"] | Fault = "follow"
    latency_s: float = Field(default=0.0, ge=0)
    limits: Limits | None = None
    auth: Literal["required", "none"] = "none"
    response_formats: list[Literal["text", "json_object", "json_schema"]] | None = None
    format_refusal_status: int = Field(default=400, ge=400, le=599)
    emulate: Literal["llama_cpp_python"] | None = None

    @model_validator(mode="after")
    def _one_mode(self) -> ProviderScript:
        modes = sum(bool(x) for x in (self.fault is not None, self.sequence, self.phases))
        if modes > 1:
            raise ValueError("use one of fault, sequence or phases per provider")
        return self

    def expanded_sequence(self) -> list[Fault]:
        return [f for f in self.sequence for _ in range(f.count)]


class FaultScript(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    time_scale: float = Field(default=1.0, gt=0)
    providers: dict[str, ProviderScript] = Field(default_factory=dict)

    @field_validator("providers")
    @classmethod
    def _prefixes(cls, value: dict[str, ProviderScript]) -> dict[str, ProviderScript]:
        for name in value:
            if not name or "/" in name.strip("/"):
                raise ValueError(
                    f"provider prefix {name!r} must be one path segment such as openai"
                )
        return {name.strip("/"): script for name, script in value.items()}


def _describe(exc: ValidationError, source: str) -> FaultScriptError:
    errors = exc.errors(include_input=False, include_url=False)
    first = errors[0]
    parts: list[str] = []
    for p in first["loc"]:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif not str(p).startswith(
            ("function-", "literal[", "int", "str", "bool", "Fault", "dict[")
        ):
            parts.append(("." if parts else "") + str(p))
    key = "".join(parts) or "(top level)"
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key — remove it or check its spelling"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return FaultScriptError(f"{source}: {key}: {message}{more}")


def parse_fault_script(data: Any, source_name: str = "<script>") -> FaultScript:
    if data is None:
        return FaultScript()
    if not isinstance(data, Mapping):
        raise FaultScriptError(
            f"{source_name}: the top level must be a mapping with a providers: key"
        )
    try:
        return FaultScript.model_validate(dict(data))
    except ValidationError as exc:
        raise _describe(exc, source_name) from None


def load_fault_script(
    source: Path | str | Mapping[str, Any] | FaultScript | None, source_name: str | None = None
) -> FaultScript:
    if source is None:
        return FaultScript()
    if isinstance(source, FaultScript):
        return source
    if isinstance(source, Mapping):
        return parse_fault_script(source, source_name or "<script>")
    path = Path(source)
    name = source_name or str(path)
    data = read_yaml_file(path, name, FaultScriptError, "pass an existing chaos script")
    return parse_fault_script(data, name)


DEFAULT_SCRIPT_PATH = Path(__file__).parent / "scripts" / "chaos.yaml"
