"""Ollama's native API as the fault server plays it: ``/api/chat`` (streamed as
newline-delimited JSON) and ``/api/tags``; no key, no rate-limit headers."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from router.fault.codec import Answer, FaultCodec, Route, pieces, utc_instant


def _line(data: Any) -> bytes:
    return (json.dumps(data) + "\n").encode()


def _done(answer: Answer, content: str, created_at: str) -> dict[str, Any]:
    """The last object of an answer: ``content`` (all of it, or none after streamed pieces)
    with the counts of the whole answer."""
    return {
        "model": answer.model,
        "created_at": created_at,
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "length" if answer.truncated else "stop",
        "prompt_eval_count": answer.input_tokens,
        "eval_count": answer.output_tokens,
    }


class OllamaCodec(FaultCodec):
    protocol = "ollama"
    known_fields = frozenset("model messages tools think format options stream keep_alive".split())
    required_fields: ClassVar[tuple[str, ...]] = ("model", "messages")
    stream_content_type = "application/x-ndjson"

    def route(
        self, method: str, api_path: str, fields: dict[str, Any], headers: dict[str, str]
    ) -> Route | None:
        if method == "POST" and api_path.endswith("/api/chat"):
            return Route("chat", self.protocol, fields.get("model"), fields.get("stream") is True)
        if method == "GET" and api_path.endswith("/api/tags"):
            return Route("health", self.protocol)
        return None

    def success_body(self, answer: Answer) -> dict[str, Any]:
        return _done(answer, answer.text, utc_instant())

    def stream_frames(self, answer: Answer) -> list[bytes]:
        created_at = utc_instant()
        frames = [
            _line(
                {
                    "model": answer.model,
                    "created_at": created_at,
                    "message": {"role": "assistant", "content": p},
                    "done": False,
                }
            )
            for p in pieces(answer.text)
        ]
        return [*frames, _line(_done(answer, "", created_at))]

    def health_body(self) -> dict[str, Any]:
        return {"models": [{"name": "fault-model:latest", "model": "fault-model:latest"}]}

    def malformed_frame(self) -> bytes:
        return b'{"message": {"content": "trunc\n'
