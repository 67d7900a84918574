"""The agent trail: the ``domain`` events an agent and the orchestrator emit.

One event per thought (with the action it chose and what its context held),
per observation, per finished invocation and per orchestrator decision. They
are emitted when a call is made, never when it is replayed from the journal,
so a resumed run's trail has each step once. The app's step detail and
``workbench runs export`` read them like any other event.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from plumbing.frozen import Frozen

THOUGHT = "agent.thought"
OBSERVATION = "agent.observation"
FINISHED = "agent.finished"
DECISION = "advisory.decision"
PLAN = "advisory.plan"
OBSERVATION_CHARS = 1500
"""How much of an observation the event shows (the journal keeps it whole)."""


class ThoughtPayload(Frozen):
    agent: str
    invocation: int
    iteration: int
    thought: str
    action: str
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    tokens: int = 0
    unreadable: str = ""


class ObservationPayload(Frozen):
    agent: str
    invocation: int
    iteration: int
    tool: str | None = None
    observation: str
    refused: str = ""
    """The rule that refused the call, when one did."""


class FinishedPayload(Frozen):
    agent: str
    invocation: int
    status: Literal["completed", "incomplete", "refused"]
    iterations: int
    tokens: int
    reason: str = ""


class DecisionPayload(Frozen):
    iteration: int
    thought: str
    proposed: str
    """What the model answered: ``invoke NAME``, ``complete`` or why it was unreadable."""
    chosen: str
    fallback: bool
    reason: str = ""


class PlanPayload(Frozen):
    offer: list[str]
    plan: list[str]
    approved: bool | None = None


def clip(value: Any, limit: int = OBSERVATION_CHARS) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
