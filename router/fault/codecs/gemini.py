"""Gemini's ``generateContent`` as the fault server plays it: ``:generateContent`` and
``:streamGenerateContent?alt=sse``, ``/v1beta/models``, and rate limits said in the error body
(``QuotaFailure``, ``RetryInfo``) rather than in headers."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from router.fault.codec import Answer, FaultCodec, Route, error_message, pieces, sse

_CHAT = re.compile(r"/v1beta/models/([^/:]+):(generateContent|streamGenerateContent)")
_STATUS = {
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
    500: "INTERNAL",
    504: "DEADLINE_EXCEEDED",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    400: "INVALID_ARGUMENT",
}


def _finish(answer: Answer) -> str:
    return "MAX_TOKENS" if answer.truncated else "STOP"


def _response(answer: Answer, text: str, tokens: int, finish: str | None) -> dict[str, Any]:
    """A ``GenerateContentResponse`` holding ``text`` (``tokens`` of output so far)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": answer.input_tokens,
            "candidatesTokenCount": tokens,
            "totalTokenCount": answer.input_tokens + tokens,
        },
        "modelVersion": answer.model,
    }


class GeminiCodec(FaultCodec):
    protocol = "gemini"
    known_fields = frozenset(
        "contents tools toolConfig tool_config safetySettings safety_settings "
        "systemInstruction system_instruction generationConfig generation_config "
        "cachedContent cached_content labels".split()
    )
    required_fields: ClassVar[tuple[str, ...]] = ("contents",)
    auth_header = "x-goog-api-key"

    def route(
        self, method: str, api_path: str, fields: dict[str, Any], headers: dict[str, str]
    ) -> Route | None:
        if method == "POST" and (m := _CHAT.search(api_path)):
            return Route("chat", self.protocol, m.group(1), m.group(2) == "streamGenerateContent")
        if method == "GET" and api_path.endswith("/v1beta/models"):
            return Route("health", self.protocol)
        return None

    def last_message_text(self, body: dict[str, Any]) -> str:
        contents = body.get("contents") or []
        if contents and isinstance(contents[-1], dict):
            return "".join(
                str(p.get("text", ""))
                for p in contents[-1].get("parts") or []
                if isinstance(p, dict)
            )
        return ""

    def success_body(self, answer: Answer) -> dict[str, Any]:
        return _response(answer, answer.text, answer.output_tokens, _finish(answer))

    def stream_frames(self, answer: Answer) -> list[bytes]:
        """One whole ``GenerateContentResponse`` per event; the last carries the finish reason
        and the whole answer's token count."""
        parts = pieces(answer.text)
        frames = []
        for index, piece in enumerate(parts):
            last = index == len(parts) - 1
            finish = _finish(answer) if last else None
            tokens = answer.output_tokens if last else index + 1
            frames.append(sse(_response(answer, piece, tokens, finish)))
        return frames

    def health_body(self) -> dict[str, Any]:
        return {
            "models": [
                {"name": "models/fault-model", "supportedGenerationMethods": ["generateContent"]}
            ]
        }

    def error_body(
        self, status: int, *, quota: str | None, retry_after_s: float | None, overloaded: bool
    ) -> dict[str, Any]:
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
        status_name = "UNAVAILABLE" if overloaded else _STATUS.get(status, "INTERNAL")
        return {
            "error": {
                "code": status,
                "message": error_message(status),
                "status": status_name,
                "details": details,
            }
        }

    def retry_after_headers(self, seconds: float, fmt: str) -> dict[str, str]:
        """None: Gemini says when to retry in the error body (``RetryInfo``)."""
        return {}
