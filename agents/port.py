"""How agents reach a model: the request they hand ``StepContext.llm`` and what comes back.

The engine cannot build a router request (it does not import the router), so
an agent describes its call as a :class:`ModelCall` and the application's
:class:`ModelPort` (``agents.services.AgentServices.port``) turns it into whatever
its ``ModelCaller`` takes. Without a port, the ``ModelCall`` itself is the
request — what tests with a scripted model use.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.registry import BUILTIN_PROVIDER, ModelProfile
from plumbing.frozen import Frozen

REACT_TASK = "agent.react"
ORCHESTRATE_TASK = "agent.orchestrate"


class ModelCall(Frozen):
    task: Literal["agent.react", "agent.orchestrate"]
    system: str
    prompt: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    """The structured form of the prompt: what the built-in model answers from."""
    profile_name: str
    profile: ModelProfile
    local_only: bool = False


class _Answer(BaseModel):
    """A model's answer: unknown keys are ignored (models add them), known ones are checked."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class AgentReply(_Answer):
    """One ReAct turn: a thought, then either a tool call or the final output."""

    thought: str = ""
    action: Literal["tool", "final"]
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    output: dict[str, Any] | None = None


class OrchestratorDecision(_Answer):
    """One orchestrator turn: invoke an agent, or declare the work complete."""

    thought: str = ""
    action: Literal["invoke", "complete"]
    agent: str | None = None


Ask = Callable[[Any], Awaitable[Any]]
"""``StepContext.llm``: one journaled model call."""


class ModelPort(Protocol):
    def request(self, call: ModelCall, schema: type[BaseModel]) -> Any:
        """The request ``StepContext.llm`` passes to the run's ModelCaller."""
        ...

    async def ask(self, llm: Ask, call: ModelCall, schema: type[BaseModel]) -> Any:
        """The model's response to ``call``, asked through ``llm``: the port may ask more than
        once (an answer cut at its output limit is asked again with more room)."""
        ...

    def answer(self, response: Any) -> Any:
        """The parsed answer (a model, a dict) or the text the model returned."""
        ...

    def is_local(self, profile: ModelProfile) -> bool:
        """Whether every provider this profile can reach is loopback or built in."""
        ...


class DirectPort:
    """No application port: the ModelCall is the request, the response is the answer."""

    def request(self, call: ModelCall, schema: type[BaseModel]) -> Any:
        return call

    async def ask(self, llm: Ask, call: ModelCall, schema: type[BaseModel]) -> Any:
        return await llm(self.request(call, schema))

    def answer(self, response: Any) -> Any:
        return response

    def is_local(self, profile: ModelProfile) -> bool:
        return profile.provider == BUILTIN_PROVIDER


M = TypeVar("M", bound=BaseModel)


def read_answer(raw: Any, schema: type[M]) -> tuple[M | None, str]:
    """(answer, "") or (None, why it is unreadable) for whatever the model returned."""
    if isinstance(raw, schema):
        return raw, ""
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(mode="json")
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("```"):
            text = text.strip("`").removeprefix("json").strip()
        try:
            raw = json.loads(text)
        except ValueError:
            return None, f"not JSON: {raw[:80]!r}"
    try:
        return schema.model_validate(raw), ""
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "answer"
        return None, f"{where}: {first['msg']}"
