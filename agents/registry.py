"""The registry's definitions: agents, tools, model profiles and governance policies.

These models are the boundary between registry YAML and the rest of the
product, so they are frozen and reject unknown keys. ``Registry`` holds one
validated set; ``agents.registry_loader`` builds it from files and
checks every cross-reference (an agent's tools and model, a policy's names).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field, model_validator

from agents.schema import FieldSpec, build_model
from engine.spec import Identifier
from plumbing.frozen import Frozen

SideEffect = Literal["read_only", "writes", "external"]

AGENT_PREFIX = "agent."
"""``uses: agent.NAME`` runs the registry agent NAME as a step."""
BUILTIN_PROVIDER = "builtin"
"""The provider name of the router's built-in model (router/local.py), always local."""


class ContextNeeds(Frozen):
    """ADR-002 §10: which upstream outputs an agent reads, under what token budget."""

    requires: list[str] = Field(default_factory=list)
    """Upstream step ids or agent names (``name`` or ``name.field``), read first and whole."""
    max_tokens: int = Field(default=3000, ge=50)


class AgentDef(Frozen):
    role: str = Field(min_length=1)
    instructions: str = ""
    """The agent's prompt template; ``{field}`` names a task input."""
    tools: list[Identifier] = Field(default_factory=list)
    model: Identifier
    """A model profile name."""
    output: dict[Identifier, FieldSpec] = Field(min_length=1)
    max_iterations: int = Field(default=5, ge=1, le=50)
    max_tokens: int = Field(default=20_000, ge=1)
    """Tokens the agent may spend over all its model calls in one invocation."""
    context: ContextNeeds = Field(default_factory=ContextNeeds)
    local_only: bool = False
    """Data that may not leave the machine: only loopback or built-in providers."""


class ToolDef(Frozen):
    description: str = Field(min_length=1)
    input: dict[Identifier, FieldSpec] = Field(default_factory=dict)
    runs: str = Field(min_length=1)
    """The registered implementation it runs (``corpus.search``)."""
    side_effect: SideEffect = "read_only"


class ModelProfile(Frozen):
    tier: int | None = Field(default=None, ge=1, le=5)
    provider: str | None = None
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    price_per_1k_tokens: float = Field(default=0.0, ge=0.0)

    @model_validator(mode="after")
    def _tier_or_provider(self) -> ModelProfile:
        if self.tier is None and self.provider is None:
            raise ValueError("a model profile names a provider tier or a provider")
        if self.model is not None and self.provider is None:
            raise ValueError("'model' needs 'provider' (the provider that serves it)")
        return self

    def cost(self, tokens: int) -> float:
        return tokens * self.price_per_1k_tokens / 1000.0


class Budget(Frozen):
    calls: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=0)
    cost: float | None = Field(default=None, ge=0.0)


class AgentRules(Frozen):
    """What one policy says about one agent (or every agent, under ``"*"``)."""

    tools: list[Identifier] | None = None
    """Tools it may use (None: whatever its definition lists)."""
    models: list[Identifier] | None = None
    """Model profiles it may use (None: any)."""
    invoke: list[Identifier] | None = None
    """Agents an orchestrator may invoke (None: whatever the workflow offers)."""
    budget: Budget = Field(default_factory=Budget)
    local_only: bool = False
    max_invocations: int | None = Field(default=None, ge=1)
    """How often one advisory run may invoke it."""


class PolicyDef(Frozen):
    description: str = ""
    agents: dict[str, AgentRules] = Field(default_factory=dict)
    """Agent name (or ``"*"`` for every agent) → rules."""
    run_budget: Budget = Field(default_factory=Budget)
    approval_required: list[Identifier] = Field(default_factory=list)
    """Tools that wait for a person's approval, the call shown, before they run."""
    denied_tools: list[Identifier] = Field(default_factory=list)


@dataclass(frozen=True)
class Origin:
    """Where a definition was written, for messages and ``registry show``."""

    file: str
    line: int
    column: int
    root: str
    """``shipped``, ``workspace`` or ``config``."""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    definition: T
    origin: Origin


@dataclass(frozen=True)
class Registry:
    """One validated set of definitions; later roots override earlier ones by name."""

    agents: dict[str, Entry[AgentDef]] = field(default_factory=dict)
    tools: dict[str, Entry[ToolDef]] = field(default_factory=dict)
    models: dict[str, Entry[ModelProfile]] = field(default_factory=dict)
    policies: dict[str, Entry[PolicyDef]] = field(default_factory=dict)

    def agent(self, name: str) -> AgentDef:
        return self.agents[name].definition

    def tool(self, name: str) -> ToolDef:
        return self.tools[name].definition

    def model(self, name: str) -> ModelProfile:
        return self.models[name].definition

    @cached_property
    def output_models(self) -> dict[str, type[BaseModel]]:
        return {
            name: build_model(f"{_camel(name)}Output", entry.definition.output)
            for name, entry in self.agents.items()
        }

    @cached_property
    def input_models(self) -> dict[str, type[BaseModel]]:
        return {
            name: build_model(f"{_camel(name)}Input", entry.definition.input)
            for name, entry in self.tools.items()
        }

    def kinds(self) -> dict[str, dict[str, Entry[Any]]]:
        return {
            "agents": dict(self.agents),
            "tools": dict(self.tools),
            "models": dict(self.models),
            "policies": dict(self.policies),
        }


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) or "Agent"
