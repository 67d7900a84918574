"""Ollama's native API as the fault server plays it: ``/api/chat`` (streamed as
newline-delimited JSON) and ``/api/tags``; no key, no rate-limit headers."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from router.fault.codec import FaultCodec, Route, output_tokens, pieces, text_of, utc_instant


def _line(data: Any) -> bytes:
    return (json.dumps(data) + "\n").encode()


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

    def success_body(
        self,
        model: str,
        answer: str | dict[str, Any],
        body: Any,
        input_tokens: int,
        serial: int,
        truncated: bool,
    ) -> dict[str, Any]:
        text = text_of(answer, truncated)
        return self._done(model, text, text, input_tokens, truncated)

    def stream_frames(
        self,
        model: str,
        answer: str | dict[str, Any],
        body: Any,
        input_tokens: int,
        serial: int,
        truncated: bool,
    ) -> list[bytes]:
        text = text_of(answer, truncated)
        created_at = utc_instant()
        frames = [
            _line(
                {
                    "model": model,
                    "created_at": created_at,
                    "message": {"role": "assistant", "content": p},
                    "done": False,
                }
            )
            for p in pieces(text)
        ]
        return [*frames, _line(self._done(model, "", text, input_tokens, truncated, created_at))]

    @staticmethod
    def _done(
        model: str,
        content: str,
        text: str,
        input_tokens: int,
        truncated: bool,
        created_at: str | None = None,
    ) -> dict[str, Any]:
        """The last object of an answer: ``content`` (all of it, or none after streamed pieces)
        with the counts of the whole ``text``."""
        return {
            "model": model,
            "created_at": created_at or utc_instant(),
            "message": {"role": "assistant", "content": content},
            "done": True,
            "done_reason": "length" if truncated else "stop",
            "prompt_eval_count": input_tokens,
            "eval_count": output_tokens(text),
        }

    def health_body(self) -> dict[str, Any]:
        return {"models": [{"name": "fault-model:latest", "model": "fault-model:latest"}]}

    def malformed_frame(self) -> bytes:
        return b'{"message": {"content": "trunc\n'
