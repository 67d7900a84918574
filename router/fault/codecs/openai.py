"""The OpenAI-compatible family as the fault server plays it: chat completions, ``/models``
(and GitHub Models' ``/catalog/models``), and Azure OpenAI's deployment paths.

It is the fallback codec: a path no other family claims is answered as OpenAI's.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from router.fault.codec import (
    Answer,
    FaultCodec,
    RateWindow,
    Refused,
    Route,
    error_message,
    pieces,
    sse,
)

_ERRORS = {
    429: ("requests", "rate_limit_exceeded"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "model_not_found"),
    400: ("invalid_request_error", "bad_request"),
}
_AZURE_CHAT = re.compile(r"/openai/deployments/([^/]+)/chat/completions")

LLAMA_CPP_PYTHON = "llama_cpp_python"
"""The server ``emulate`` can play: llama-cpp-python's OpenAI-compatible server."""
LLAMA_CPP_PYTHON_FORMATS = ("text", "json_object")
"""The ``response_format`` types its request model (``ChatCompletionRequestResponseFormat``) takes."""


def _go_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{int(round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:g}s" if minutes else f"{rest:g}s"


def _finish(answer: Answer) -> str:
    return "length" if answer.truncated else "stop"


def _usage(answer: Answer) -> dict[str, int]:
    tokens = answer.output_tokens
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": tokens,
        "total_tokens": answer.input_tokens + tokens,
    }


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


class OpenAICodec(FaultCodec):
    protocol = "openai"
    fallback = True
    known_fields = frozenset(
        "messages model audio frequency_penalty function_call functions logit_bias logprobs "
        "max_completion_tokens max_tokens metadata modalities n parallel_tool_calls prediction "
        "moderation presence_penalty prompt_cache_key prompt_cache_options "
        "prompt_cache_retention reasoning_effort "
        "response_format safety_identifier seed service_tier stop store stream stream_options "
        "temperature tool_choice tools top_logprobs top_p user verbosity "
        "web_search_options".split()
    )
    required_fields: ClassVar[tuple[str, ...]] = ("model", "messages")
    auth_header = "authorization"
    sends_limits = True
    """Whether ``x-ratelimit-limit-*`` headers are sent (Azure sends only the remaining)."""

    def route(
        self, method: str, api_path: str, fields: dict[str, Any], headers: dict[str, str]
    ) -> Route | None:
        if method == "POST" and api_path.endswith("/chat/completions"):
            return Route("chat", self.protocol, fields.get("model"), fields.get("stream") is True)
        if method == "GET" and api_path.endswith(("/catalog/models", "/models")):
            return Route("health", self.protocol)
        return None

    def success_body(self, answer: Answer) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fault-{answer.serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": answer.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.text},
                    "finish_reason": _finish(answer),
                }
            ],
            "usage": _usage(answer),
        }

    def stream_frames(self, answer: Answer) -> list[bytes]:
        chunk_id, created = f"chatcmpl-fault-{answer.serial}", int(time.time())

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
            return {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": answer.model,
                "choices": choices,
                **extra,
            }

        frames = [sse(chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}}]))]
        frames += [
            sse(chunk([{"index": 0, "delta": {"content": p}, "finish_reason": None}]))
            for p in pieces(answer.text)
        ]
        frames.append(sse(chunk([{"index": 0, "delta": {}, "finish_reason": _finish(answer)}])))
        request = answer.request
        options = request.get("stream_options") if isinstance(request, dict) else None
        if isinstance(options, dict) and options.get("include_usage"):
            frames.append(sse(chunk([], usage=_usage(answer))))
        return [*frames, sse("[DONE]")]

    def health_body(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "fault-model", "object": "model"}]}

    def error_body(
        self, status: int, *, quota: str | None, retry_after_s: float | None, overloaded: bool
    ) -> dict[str, Any]:
        err_type, code = _ERRORS.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None)
        )
        if quota == "spend":
            err_type, code = "insufficient_quota", "insufficient_quota"
        return {
            "error": {
                "message": error_message(status),
                "type": err_type,
                "param": None,
                "code": code,
            }
        }

    def rate_limit_headers(self, window: RateWindow) -> dict[str, str]:
        headers: dict[str, str] = {}
        for dimension, limit, left, reset_s in (
            ("requests", window.rpm, window.rpm_left, window.reset_requests_s),
            ("tokens", window.tpm, window.tpm_left, window.reset_tokens_s),
        ):
            if limit is None:
                continue
            if self.sends_limits:
                headers[f"x-ratelimit-limit-{dimension}"] = str(limit)
            headers[f"x-ratelimit-remaining-{dimension}"] = str(left)
            headers[f"x-ratelimit-reset-{dimension}"] = _go_duration(reset_s)
        return headers

    def format_refusal(
        self,
        fields: dict[str, Any],
        response_formats: Sequence[str] | None,
        status: int,
        emulate: str | None,
    ) -> Refused | None:
        """A ``response_format`` type the scripted server does not take: refused with
        ``status`` naming the field, or — emulating llama-cpp-python — as that server does."""
        fmt = fields.get("response_format")
        if emulate == LLAMA_CPP_PYTHON and response_formats is None:
            response_formats = LLAMA_CPP_PYTHON_FORMATS
        if response_formats is None or not isinstance(fmt, dict):
            return None
        if fmt.get("type") in response_formats:
            return None
        if emulate == LLAMA_CPP_PYTHON:
            return llama_cpp_python_format_refusal(fmt.get("type"), response_formats)
        accepted = " or ".join(repr(f) for f in response_formats)
        return Refused(status, f"response_format.type: Input should be {accepted}")


class AzureCodec(OpenAICodec):
    """Azure OpenAI: the deployment in the path, the key in ``api-key``, no model field needed."""

    protocol = "azure"
    fallback = False
    required_fields = ("messages",)
    auth_header = "api-key"
    sends_limits = False

    def route(
        self, method: str, api_path: str, fields: dict[str, Any], headers: dict[str, str]
    ) -> Route | None:
        if method == "POST" and (m := _AZURE_CHAT.fullmatch(api_path)):
            return Route("chat", self.protocol, m.group(1), fields.get("stream") is True)
        if method == "GET" and api_path.endswith("/openai/models"):
            return Route("health", self.protocol)
        return None
