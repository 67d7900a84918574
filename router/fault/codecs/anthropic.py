"""Anthropic's Messages API as the fault server plays it: ``/v1/messages`` (a forced tool's
input as the structured answer), ``/v1/models``, 529 for an overload, and the
``anthropic-version`` header every request must carry."""

from __future__ import annotations

import json
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
    utc_instant,
)

_ERRORS = {
    429: "rate_limit_error",
    529: "overloaded_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    400: "invalid_request_error",
    413: "request_too_large",
    500: "api_error",
}


def _forced_tool(body: Any) -> str | None:
    """The tool a request forces (``tool_choice: {type: tool, name}``): its structured answer."""
    if isinstance(body, dict) and isinstance(body.get("tool_choice"), dict):
        name = body["tool_choice"].get("name")
        return name if isinstance(name, str) else None
    return None


def _tool_id(answer: Answer) -> str:
    return f"toolu_fault_{answer.serial}"


def _text_stop(answer: Answer) -> str:
    return "max_tokens" if answer.truncated else "end_turn"


def _message(answer: Answer, content: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
    return {
        "id": f"msg_fault_{answer.serial}",
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
    }


class AnthropicCodec(FaultCodec):
    protocol = "anthropic"
    known_fields = frozenset(
        "model messages max_tokens cache_control container diagnostics inference_geo metadata "
        "output_config service_tier speed stop_sequences stream system thinking tool_choice "
        "tools user_profile_id workspace_id".split()
    )
    required_fields: ClassVar[tuple[str, ...]] = ("model", "messages", "max_tokens")
    auth_header = "x-api-key"

    def route(
        self, method: str, api_path: str, fields: dict[str, Any], headers: dict[str, str]
    ) -> Route | None:
        if method == "POST" and api_path.endswith("/v1/messages"):
            return Route("chat", self.protocol, fields.get("model"), fields.get("stream") is True)
        if method == "GET" and api_path.endswith("/v1/models") and "anthropic-version" in headers:
            return Route("health", self.protocol)
        return None

    def header_refusal(self, headers: dict[str, str]) -> Refused | None:
        if "anthropic-version" not in headers:
            return Refused(400, "anthropic-version: header is required")
        return None

    def success_body(self, answer: Answer) -> dict[str, Any]:
        tool = None if answer.truncated else _forced_tool(answer.request)
        structured: Any = answer.content
        if tool is not None and isinstance(structured, str):
            try:
                structured = json.loads(structured)
            except ValueError:
                structured = None
        if tool is not None and isinstance(structured, dict):
            block = {"type": "tool_use", "id": _tool_id(answer), "name": tool, "input": structured}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": answer.text}
            stop = _text_stop(answer)
        return {
            **_message(answer, [block], stop),
            "usage": {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens},
        }

    def stream_frames(self, answer: Answer) -> list[bytes]:
        text = answer.text
        tool = None if answer.truncated else _forced_tool(answer.request)
        if tool is not None and not isinstance(answer.content, dict):
            try:
                tool = tool if isinstance(json.loads(text), dict) else None
            except ValueError:
                tool = None
        block: dict[str, Any] = (
            {"type": "tool_use", "id": _tool_id(answer), "name": tool, "input": {}}
            if tool is not None
            else {"type": "text", "text": ""}
        )
        delta_type, delta_key = (
            ("input_json_delta", "partial_json") if tool is not None else ("text_delta", "text")
        )
        message = {
            **_message(answer, [], None),
            "usage": {"input_tokens": answer.input_tokens, "output_tokens": 1},
        }
        frames = [
            sse({"type": "message_start", "message": message}, "message_start"),
            sse(
                {"type": "content_block_start", "index": 0, "content_block": block},
                "content_block_start",
            ),
            sse({"type": "ping"}, "ping"),
        ]
        frames += [
            sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": delta_type, delta_key: p},
                },
                "content_block_delta",
            )
            for p in pieces(text)
        ]
        stop = "tool_use" if tool is not None else _text_stop(answer)
        return [
            *frames,
            sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": answer.output_tokens},
                },
                "message_delta",
            ),
            sse({"type": "message_stop"}, "message_stop"),
        ]

    def health_body(self) -> dict[str, Any]:
        return {"data": [{"id": "fault-model", "type": "model"}], "has_more": False}

    def error_status(self, status: int, overloaded: bool) -> int:
        return 529 if overloaded else status

    def error_body(
        self, status: int, *, quota: str | None, retry_after_s: float | None, overloaded: bool
    ) -> dict[str, Any]:
        err_type = (
            "overloaded_error"
            if overloaded
            else _ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        )
        return {"type": "error", "error": {"type": err_type, "message": error_message(status)}}

    def rate_limit_headers(self, window: RateWindow) -> dict[str, str]:
        headers: dict[str, str] = {}
        for dimension, limit, left, reset_s in (
            ("requests", window.rpm, window.rpm_left, window.reset_requests_s),
            ("tokens", window.tpm, window.tpm_left, window.reset_tokens_s),
        ):
            if limit is None:
                continue
            headers[f"anthropic-ratelimit-{dimension}-limit"] = str(limit)
            headers[f"anthropic-ratelimit-{dimension}-remaining"] = str(left)
            headers[f"anthropic-ratelimit-{dimension}-reset"] = utc_instant(reset_s)
        return headers
