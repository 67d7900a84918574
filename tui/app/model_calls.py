"""A step's model calls as a person reads them: the messages sent, the answer, what it cost.

Read from the run's call journal (each ``llm`` entry is the router's answer; the app's model
caller adds the messages that were sent under :data:`SENT_KEY`). Plain Python, no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from engine.context import JournalEntry
from router.models import ChatMessage, ChatResponse
from tui.launch.journal import SENT_KEY


class JournalReader(Protocol):
    def journal_entries(
        self, run_id: str, step_id: str, iteration: int
    ) -> list[tuple[int, JournalEntry]]: ...


@dataclass(frozen=True)
class ModelCall:
    index: int
    """The call's place among the step's journaled calls."""
    sent: list[ChatMessage]
    """Empty when the run was made before prompts were kept."""
    answer: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    latency_s: float
    cost_usd: float

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def model_call(index: int, payload: Any) -> ModelCall | None:
    """One journaled ``llm`` entry, or None when it is not a router answer."""
    if not isinstance(payload, dict):
        return None
    answer = {key: value for key, value in payload.items() if key != SENT_KEY}
    try:
        response = ChatResponse.model_validate(answer)
        sent = [ChatMessage.model_validate(m) for m in payload.get(SENT_KEY) or []]
    except ValidationError:
        return None
    return ModelCall(
        index=index,
        sent=sent,
        answer=response.content,
        provider=response.provider,
        model=response.model,
        input_tokens=response.usage.input_tokens,
        output_tokens=response.usage.output_tokens,
        latency_s=response.latency_s,
        cost_usd=response.cost_usd,
    )


def model_calls(store: JournalReader, run_id: str, step_id: str, iteration: int) -> list[ModelCall]:
    """The model calls one step iteration made, in order."""
    calls = []
    for index, entry in store.journal_entries(run_id, step_id, iteration):
        call = model_call(index, entry.payload) if entry.kind == "llm" else None
        if call is not None:
            calls.append(call)
    return calls
