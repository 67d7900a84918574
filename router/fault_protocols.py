"""The wire formats the fault server speaks: which API a path belongs to, and each API's bodies and headers.

Success bodies, error bodies and rate-limit headers follow each provider's
documented shapes, so the router's adapters and classifiers are tested against
the same formats they meet in production.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

from router.wire import extract_inputs

Protocol = str  # "openai" | "azure" | "anthropic" | "gemini" | "ollama"

_GEMINI_CHAT = re.compile(r"/v1beta/models/([^/:]+):(generateContent|streamGenerateContent)")
_AZURE_CHAT = re.compile(r"/openai/deployments/([^/]+)/chat/completions")


@dataclass(frozen=True, slots=True)
class Route:
    kind: str  # "chat" | "health" | "unknown"
    protocol: Protocol
    model: str | None = None
    stream: bool = False


def route_for(
    method: str, api_path: str, body: Any, headers: dict[str, str] | None = None
) -> Route:
    """Which API and which endpoint a request (path below the provider prefix) is for."""
    if method == "POST":
        fields = body if isinstance(body, dict) else {}
        stream = fields.get("stream") is True
        if m := _AZURE_CHAT.fullmatch(api_path):
            return Route("chat", "azure", m.group(1), stream)
        if api_path.endswith("/chat/completions"):
            return Route("chat", "openai", fields.get("model"), stream)
        if api_path.endswith("/v1/messages"):
            return Route("chat", "anthropic", fields.get("model"), stream)
        if m := _GEMINI_CHAT.search(api_path):
            return Route("chat", "gemini", m.group(1), m.group(2) == "streamGenerateContent")
        if api_path.endswith("/api/chat"):
            return Route("chat", "ollama", fields.get("model"), stream)
    if method == "GET":
        if api_path.endswith("/api/tags"):
            return Route("health", "ollama")
        if api_path.endswith("/openai/models"):
            return Route("health", "azure")
        if api_path.endswith("/v1beta/models"):
            return Route("health", "gemini")
        if api_path.endswith("/catalog/models"):
            return Route("health", "openai")
        if api_path.endswith("/v1/models"):
            anthropic = "anthropic-version" in (headers or {})
            return Route("health", "anthropic" if anthropic else "openai")
        if api_path.endswith("/models"):
            return Route("health", "openai")
    return Route("unknown", "openai")


def last_message_text(protocol: Protocol, body: Any) -> str:
    """The text of the last message, wherever this API keeps it."""
    if not isinstance(body, dict):
        return ""
    if protocol == "gemini":
        contents = body.get("contents") or []
        if contents and isinstance(contents[-1], dict):
            return "".join(
                str(p.get("text", ""))
                for p in contents[-1].get("parts") or []
                if isinstance(p, dict)
            )
        return ""
    messages = body.get("messages") or []
    if messages and isinstance(messages[-1], dict):
        content = messages[-1].get("content", "")
        if isinstance(content, list):  # Anthropic content blocks
            return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return str(content)
    return ""


def request_inputs(protocol: Protocol, body: Any) -> dict[str, Any]:
    return extract_inputs(last_message_text(protocol, body))


def prompt_tokens(raw_body: bytes) -> int:
    return max(1, len(raw_body) // 4)


def _anthropic_tool(body: Any) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("tool_choice"), dict):
        name = body["tool_choice"].get("name")
        return name if isinstance(name, str) else None
    return None


def success_body(
    protocol: Protocol,
    model: str | None,
    answer: str | dict[str, Any],
    body: Any,
    input_tokens: int,
    serial: int,
    truncated: bool = False,
) -> dict[str, Any]:
    """The API's answer; ``truncated``: its first half, stopped at the output-token limit."""
    text = _text_of(answer, truncated)
    output_tokens = max(1, len(text) // 4)
    model = model or "fault-model"
    if protocol in ("openai", "azure"):
        return {
            "id": f"chatcmpl-fault-{serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "length" if truncated else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        }
    if protocol == "anthropic":
        tool = None if truncated else _anthropic_tool(body)
        structured: Any = answer
        if tool is not None and isinstance(answer, str):
            try:
                structured = json.loads(answer)
            except ValueError:
                structured = None
        if tool is not None and isinstance(structured, dict):
            content = [
                {
                    "type": "tool_use",
                    "id": f"toolu_fault_{serial}",
                    "name": tool,
                    "input": structured,
                }
            ]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": text}]
            stop = "max_tokens" if truncated else "end_turn"
        return {
            "id": f"msg_fault_{serial}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    if protocol == "gemini":
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "MAX_TOKENS" if truncated else "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": input_tokens,
                "candidatesTokenCount": output_tokens,
                "totalTokenCount": input_tokens + output_tokens,
            },
            "modelVersion": model,
        }
    return {
        "model": model,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": "length" if truncated else "stop",
        "prompt_eval_count": input_tokens,
        "eval_count": output_tokens,
    }


def _text_of(answer: str | dict[str, Any], truncated: bool) -> str:
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return text[: len(text) // 2] if truncated else text


def health_body(protocol: Protocol) -> dict[str, Any]:
    if protocol == "ollama":
        return {"models": [{"name": "fault-model:latest", "model": "fault-model:latest"}]}
    if protocol == "gemini":
        return {
            "models": [
                {"name": "models/fault-model", "supportedGenerationMethods": ["generateContent"]}
            ]
        }
    if protocol == "anthropic":
        return {"data": [{"id": "fault-model", "type": "model"}], "has_more": False}
    return {"object": "list", "data": [{"id": "fault-model", "object": "model"}]}


_OPENAI_ERRORS = {
    429: ("requests", "rate_limit_exceeded"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "model_not_found"),
    400: ("invalid_request_error", "bad_request"),
}
_ANTHROPIC_ERRORS = {
    429: "rate_limit_error",
    529: "overloaded_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    400: "invalid_request_error",
    413: "request_too_large",
    500: "api_error",
}
_GEMINI_STATUS = {
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
    500: "INTERNAL",
    504: "DEADLINE_EXCEEDED",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    400: "INVALID_ARGUMENT",
}


def error_status(protocol: Protocol, status: int, overloaded: bool) -> int:
    """The status an overload is reported with: Anthropic's 529, everyone else's 503."""
    if overloaded:
        return 529 if protocol == "anthropic" else 503
    return status


def error_body(
    protocol: Protocol,
    status: int,
    *,
    quota: str | None,
    retry_after_s: float | None,
    overloaded: bool,
) -> dict[str, Any]:
    message = f"fault server: scripted HTTP {status}"
    if protocol in ("openai", "azure"):
        err_type, code = _OPENAI_ERRORS.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None)
        )
        if quota == "spend":
            err_type, code = "insufficient_quota", "insufficient_quota"
        return {"error": {"message": message, "type": err_type, "param": None, "code": code}}
    if protocol == "anthropic":
        err_type = (
            "overloaded_error"
            if overloaded
            else _ANTHROPIC_ERRORS.get(
                status, "api_error" if status >= 500 else "invalid_request_error"
            )
        )
        return {"type": "error", "error": {"type": err_type, "message": message}}
    if protocol == "gemini":
        details: list[dict[str, Any]] = []
        if status == 429:
            quota_id = (
                "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
                if quota == "daily"
                else "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
            )
            details.append(
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                            "quotaId": quota_id,
                        }
                    ],
                }
            )
            if retry_after_s is not None:
                details.append(
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{retry_after_s:.3f}".rstrip("0").rstrip(".") + "s",
                    }
                )
        status_name = "UNAVAILABLE" if overloaded else _GEMINI_STATUS.get(status, "INTERNAL")
        return {
            "error": {"code": status, "message": message, "status": status_name, "details": details}
        }
    return {"error": message}


def retry_after_headers(protocol: Protocol, seconds: float, fmt: str) -> dict[str, str]:
    """Retry-After as each API sends it (Gemini uses RetryInfo in the body instead)."""
    if protocol == "gemini":
        return {}
    if fmt == "date":
        return {"retry-after": formatdate(time.time() + seconds, usegmt=True)}
    headers = {"retry-after-ms": str(int(round(seconds * 1000)))} if fmt == "ms" else {}
    if fmt == "seconds":
        whole = math.ceil(seconds)
        headers["retry-after"] = str(whole)
        if whole != seconds:  # a scaled delay below a second: the precise value too
            headers["retry-after-ms"] = str(int(round(seconds * 1000)))
    return headers


def _go_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{int(round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:g}s" if minutes else f"{rest:g}s"


def rate_limit_headers(
    protocol: Protocol,
    *,
    rpm: int | None,
    rpm_left: int,
    tpm: int | None,
    tpm_left: int,
    reset_requests_s: float,
    reset_tokens_s: float,
) -> dict[str, str]:
    headers: dict[str, str] = {}
    if protocol in ("openai", "azure"):
        if rpm is not None:
            if protocol == "openai":
                headers["x-ratelimit-limit-requests"] = str(rpm)
            headers["x-ratelimit-remaining-requests"] = str(rpm_left)
            headers["x-ratelimit-reset-requests"] = _go_duration(reset_requests_s)
        if tpm is not None:
            if protocol == "openai":
                headers["x-ratelimit-limit-tokens"] = str(tpm)
            headers["x-ratelimit-remaining-tokens"] = str(tpm_left)
            headers["x-ratelimit-reset-tokens"] = _go_duration(reset_tokens_s)
    elif protocol == "anthropic":

        def instant(delay: float) -> str:
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + delay)) + "Z"

        if rpm is not None:
            headers["anthropic-ratelimit-requests-limit"] = str(rpm)
            headers["anthropic-ratelimit-requests-remaining"] = str(rpm_left)
            headers["anthropic-ratelimit-requests-reset"] = instant(reset_requests_s)
        if tpm is not None:
            headers["anthropic-ratelimit-tokens-limit"] = str(tpm)
            headers["anthropic-ratelimit-tokens-remaining"] = str(tpm_left)
            headers["anthropic-ratelimit-tokens-reset"] = instant(reset_tokens_s)
    return headers


# --- what the real APIs refuse -----------------------------------------------------------------------

# Top-level request fields each API documents (its reference pages, mirrored by the official
# SDKs' request types); anything else is refused with a 400, as the real APIs do. The
# conformance tests check these lists against the SDKs' request types.
KNOWN_FIELDS: dict[Protocol, frozenset[str]] = {
    "openai": frozenset(
        "messages model audio frequency_penalty function_call functions logit_bias logprobs "
        "max_completion_tokens max_tokens metadata modalities n parallel_tool_calls prediction "
        "moderation presence_penalty prompt_cache_key prompt_cache_options "
        "prompt_cache_retention reasoning_effort "
        "response_format safety_identifier seed service_tier stop store stream stream_options "
        "temperature tool_choice tools top_logprobs top_p user verbosity "
        "web_search_options".split()
    ),
    "anthropic": frozenset(
        "model messages max_tokens cache_control container diagnostics inference_geo metadata "
        "output_config service_tier speed stop_sequences stream system thinking tool_choice "
        "tools user_profile_id workspace_id".split()
    ),
    "gemini": frozenset(
        "contents tools toolConfig tool_config safetySettings safety_settings "
        "systemInstruction system_instruction generationConfig generation_config "
        "cachedContent cached_content labels".split()
    ),
    "ollama": frozenset("model messages tools think format options stream keep_alive".split()),
}
KNOWN_FIELDS["azure"] = KNOWN_FIELDS["openai"]
_REQUIRED_FIELDS: dict[Protocol, tuple[str, ...]] = {
    "openai": ("model", "messages"),
    "azure": ("messages",),
    "anthropic": ("model", "messages", "max_tokens"),
    "gemini": ("contents",),
    "ollama": ("model", "messages"),
}
_AUTH_HEADERS: dict[Protocol, str] = {
    "openai": "authorization",
    "azure": "api-key",
    "anthropic": "x-api-key",
    "gemini": "x-goog-api-key",
}


@dataclass(frozen=True)
class Refused:
    """A request the real server would refuse: the status, and either a message for the
    protocol's error body or (``body``) the whole body a particular server sends instead."""

    status: int
    message: str
    body: dict[str, Any] | None = None


LLAMA_CPP_PYTHON = "llama_cpp_python"
"""The server ``emulate`` can play: llama-cpp-python's OpenAI-compatible server."""
LLAMA_CPP_PYTHON_FORMATS = ("text", "json_object")
"""The ``response_format`` types its request model (``ChatCompletionRequestResponseFormat``) takes."""


def llama_cpp_python_format_refusal(given: Any, accepted: Sequence[str]) -> Refused:
    """What llama-cpp-python's server answers a ``response_format`` type it does not take.

    FastAPI raises a ``RequestValidationError``; the server's ``RouteErrorHandler`` catches it
    as an unexpected exception and answers 500 with an OpenAI-style envelope of type
    ``internal_server_error`` whose message is ``str(error)``: FastAPI's "N validation error"
    text listing pydantic's error dicts (Python reprs) and the endpoint.
    """
    names = [repr(f) for f in accepted]
    expected = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    error = {
        "type": "literal_error",
        "loc": ("body", "response_format", "type"),
        "msg": f"Input should be {expected}",
        "input": given,
        "ctx": {"expected": expected},
    }
    message = (
        f"1 validation error:\n  {error}\n\n"
        '  File "/srv/venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376,'
        " in create_chat_completion\n    POST /v1/chat/completions"
    )
    body = {
        "error": {"message": message, "type": "internal_server_error", "param": None, "code": None}
    }
    return Refused(500, message, body)


def refusal(
    protocol: Protocol,
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
    has a top-level field the API does not define is a 400 naming the field. Emulating
    llama-cpp-python, unknown fields are ignored (its pydantic request model ignores them)
    and a ``response_format`` type other than ``text``/``json_object`` gets that server's 500.
    """
    auth = _AUTH_HEADERS.get(protocol)
    if needs_auth and auth is not None and not headers.get(auth, "").strip():
        return Refused(401, f"missing {auth} header")
    if protocol == "anthropic" and "anthropic-version" not in headers:
        return Refused(400, "anthropic-version: header is required")
    if route_kind != "chat":
        return None
    if not isinstance(body, dict):
        return Refused(400, "the request body is not a JSON object")
    for name in _REQUIRED_FIELDS.get(protocol, ()):
        if name not in body:
            return Refused(400, f"{name}: Field required")
    known = KNOWN_FIELDS.get(protocol)
    unknown = sorted(set(body) - known) if known is not None and emulate is None else []
    if unknown:
        return Refused(400, f"{unknown[0]}: Extra inputs are not permitted")
    fmt = body.get("response_format")
    if emulate == LLAMA_CPP_PYTHON and response_formats is None:
        response_formats = LLAMA_CPP_PYTHON_FORMATS
    if response_formats is not None and protocol in ("openai", "azure") and isinstance(fmt, dict):
        if fmt.get("type") not in response_formats:
            if emulate == LLAMA_CPP_PYTHON:
                return llama_cpp_python_format_refusal(fmt.get("type"), response_formats)
            accepted = " or ".join(repr(f) for f in response_formats)
            return Refused(
                format_refusal_status, f"response_format.type: Input should be {accepted}"
            )
    return None


# --- streamed answers --------------------------------------------------------------------------------


def _pieces(text: str, count: int = 8) -> list[str]:
    """``text`` cut into about ``count`` pieces (at least one, possibly empty)."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(data: Any, event: str | None = None) -> bytes:
    encoded = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {encoded}\n\n".encode()


def _ndjson(data: Any) -> bytes:
    return (json.dumps(data) + "\n").encode()


def stream_frames(
    protocol: Protocol,
    model: str | None,
    answer: str | dict[str, Any],
    body: Any,
    input_tokens: int,
    serial: int,
    truncated: bool = False,
) -> list[bytes]:
    """A streamed answer as the API frames it: SSE events (NDJSON lines for Ollama), in order;
    ``truncated`` as in :func:`success_body`."""
    text = _text_of(answer, truncated)
    output_tokens = max(1, len(text) // 4)
    model = model or "fault-model"
    pieces = _pieces(text)
    if protocol in ("openai", "azure"):
        chunk_id, created = f"chatcmpl-fault-{serial}", int(time.time())

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
            return {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": choices,
                **extra,
            }

        frames = [_sse(chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}}]))]
        frames += [
            _sse(chunk([{"index": 0, "delta": {"content": p}, "finish_reason": None}]))
            for p in pieces
        ]
        finish = "length" if truncated else "stop"
        frames.append(_sse(chunk([{"index": 0, "delta": {}, "finish_reason": finish}])))
        options = body.get("stream_options") if isinstance(body, dict) else None
        if isinstance(options, dict) and options.get("include_usage"):
            usage = {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            }
            frames.append(_sse(chunk([], usage=usage)))
        return [*frames, _sse("[DONE]")]
    if protocol == "anthropic":
        tool = None if truncated else _anthropic_tool(body)
        if tool is not None and not isinstance(answer, dict):
            try:
                tool = tool if isinstance(json.loads(text), dict) else None
            except ValueError:
                tool = None
        block: dict[str, Any] = (
            {"type": "tool_use", "id": f"toolu_fault_{serial}", "name": tool, "input": {}}
            if tool is not None
            else {"type": "text", "text": ""}
        )
        delta_type, delta_key = (
            ("input_json_delta", "partial_json") if tool is not None else ("text_delta", "text")
        )
        message: dict[str, Any] = {
            "id": f"msg_fault_{serial}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }
        frames = [
            _sse({"type": "message_start", "message": message}, "message_start"),
            _sse(
                {"type": "content_block_start", "index": 0, "content_block": block},
                "content_block_start",
            ),
            _sse({"type": "ping"}, "ping"),
        ]
        frames += [
            _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": delta_type, delta_key: p},
                },
                "content_block_delta",
            )
            for p in pieces
        ]
        stop = "tool_use" if tool is not None else "max_tokens" if truncated else "end_turn"
        return [
            *frames,
            _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                },
                "message_delta",
            ),
            _sse({"type": "message_stop"}, "message_stop"),
        ]
    if protocol == "gemini":
        frames = []
        for index, p in enumerate(pieces):
            last = index == len(pieces) - 1
            candidate: dict[str, Any] = {
                "content": {"role": "model", "parts": [{"text": p}]},
                "index": 0,
            }
            if last:
                candidate["finishReason"] = "MAX_TOKENS" if truncated else "STOP"
            frames.append(
                _sse(
                    {
                        "candidates": [candidate],
                        "usageMetadata": {
                            "promptTokenCount": input_tokens,
                            "candidatesTokenCount": output_tokens if last else index + 1,
                            "totalTokenCount": input_tokens
                            + (output_tokens if last else index + 1),
                        },
                        "modelVersion": model,
                    }
                )
            )
        return frames
    created_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    frames = [
        _ndjson(
            {
                "model": model,
                "created_at": created_at,
                "message": {"role": "assistant", "content": p},
                "done": False,
            }
        )
        for p in pieces
    ]
    final = {
        "model": model,
        "created_at": created_at,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "length" if truncated else "stop",
        "prompt_eval_count": input_tokens,
        "eval_count": output_tokens,
    }
    return [*frames, _ndjson(final)]


def malformed_frame(protocol: Protocol) -> bytes:
    """A chunk cut mid-JSON, in the protocol's framing."""
    if protocol == "ollama":
        return b'{"message": {"content": "trunc\n'
    return b'data: {"choices": [{"delta": {"content": "trunc\n\n'


def stream_content_type(protocol: Protocol) -> str:
    return "application/x-ndjson" if protocol == "ollama" else "text/event-stream"
