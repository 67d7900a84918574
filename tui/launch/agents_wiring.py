"""The composition root's side of agents: registry roots, tool implementations, the model port.

Here the agents meet the router and research: registry files are read from
the shipped ``workflows/`` folder, the workspace and the config directory;
research's corpus tools are registered as tool implementations; every agent
becomes the step ``agent.NAME``; agent calls become router ``ChatRequest`` s
(:class:`RouterAgentPort`), and the built-in model answers agent tasks with
the engine's deterministic policies, so agents work offline. A local-only
agent's calls go to a router holding only the loopback providers (and the
built-in model), so nothing it is given can leave the machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import research.agent_tools  # noqa: F401 - registers the corpus tool implementations
from agents.builtin_model import orchestrate_reply, react_reply
from agents.port import ORCHESTRATE_TASK, REACT_TASK, Ask, ModelCall
from agents.registration import register_agents
from agents.registry import BUILTIN_PROVIDER, ModelProfile, Registry
from agents.registry_loader import RegistryLoad, load_registry
from agents.tools import TOOL_IMPLEMENTATIONS
from engine.context import StepInfo
from engine.live import ModelOutputSink
from plumbing.network import is_loopback
from router.config import ProfileConfig, RouterConfig
from router.errors import RouterError
from router.local import TaskHandlerRegistry
from router.models import ChatMessage, ChatRequest, ChatResponse, ContextLimit
from router.truncation import ask_with_room
from router.wire import wire_messages
from tui.launch.journal import SENT_KEY
from tui.paths import standard_config_path
from workflows import WORKFLOWS_DIR

if TYPE_CHECKING:  # the router (and httpx) load only when a run builds one
    from router.router import SmartModelRouter

SHIPPED_ROOT = WORKFLOWS_DIR


def registry_roots(workspace_root: Path) -> list[tuple[Path, str]]:
    """The folders whose registry files count: shipped, the workspace's, the config file's."""
    roots = [(SHIPPED_ROOT, "shipped"), (workspace_root, "workspace")]
    config_dir = standard_config_path().parent
    if config_dir.resolve() != workspace_root.resolve():
        roots.append((config_dir, "config"))
    return roots


def load_agent_registry(workspace_root: Path) -> RegistryLoad:
    """Read the registry files the workspace in ``workspace_root`` sees (uncached:
    :meth:`~tui.launch.workspace.Workspace.agent_registry` keeps one per workspace)."""
    return load_registry(registry_roots(workspace_root), TOOL_IMPLEMENTATIONS.names())


def register_agent_steps(loaded: RegistryLoad) -> RegistryLoad:
    """Register the agents of a workspace's registry (read once per workspace) as steps."""
    register_agents(loaded.registry)
    return loaded


def register_agent_handlers(handlers: TaskHandlerRegistry) -> TaskHandlerRegistry:
    """The built-in model's answers to agent tasks (deterministic, offline)."""
    handlers.register(REACT_TASK, lambda request: react_reply(dict(request.inputs)), replace=True)
    handlers.register(
        ORCHESTRATE_TASK, lambda request: orchestrate_reply(dict(request.inputs)), replace=True
    )
    return handlers


def with_agent_profiles(config: RouterConfig, registry: Registry) -> RouterConfig:
    """Registry model profiles that name a configured provider become router profiles."""
    names = {p.name for p in config.providers}
    profiles = dict(config.profiles)
    for name, entry in registry.models.items():
        profile = entry.definition
        if profile.provider in names and name not in profiles:
            profiles[name] = ProfileConfig(
                provider=profile.provider,
                model=profile.model,
                temperature=profile.temperature,
                max_tokens=profile.max_tokens,
            )
    return config.model_copy(update={"profiles": profiles})


def local_config(config: RouterConfig) -> RouterConfig:
    """``config`` keeping only the providers on this machine (loopback base URLs)."""
    kept = [p for p in config.providers if _is_loopback(p.resolved_base_url)]
    names = {p.name for p in kept}
    profiles = {n: p for n, p in config.profiles.items() if p.provider in names}
    return config.model_copy(update={"providers": kept, "profiles": profiles})


def _is_loopback(url: str) -> bool:
    return is_loopback(urlparse(url).hostname or "")


@dataclass(frozen=True)
class LocalOnlyRequest:
    """A request that may reach only loopback providers and the built-in model
    (``builtin_only``: only the built-in model)."""

    request: ChatRequest
    builtin_only: bool = False


class RouterAgentPort:
    """``agents.port.ModelPort`` over the router's request and response shapes."""

    def __init__(self, router: SmartModelRouter) -> None:
        self.config = router.config
        self.more_room = router.more_room

    async def ask(self, llm: Ask, call: ModelCall, schema: type[Any]) -> Any:
        """``llm`` with the router request for ``call``; an answer cut at its output limit is
        asked again once with more room, like every caller's (router/truncation.py)."""
        first = self.request(call, schema)
        local = first if isinstance(first, LocalOnlyRequest) else None
        request = first.request if isinstance(first, LocalOnlyRequest) else first

        async def send(asked: ChatRequest) -> Any:
            return await llm(asked if local is None else replace(local, request=asked))

        return await ask_with_room(send, request, self.more_room, keep_cut_on=(RouterError,))

    def request(self, call: ModelCall, schema: type[Any]) -> ChatRequest | LocalOnlyRequest:
        profile = call.profile
        named = call.profile_name if call.profile_name in self.config.profiles else None
        request = ChatRequest(
            task=call.task,
            messages=[
                ChatMessage(role="system", content=call.system),
                ChatMessage(role="user", content=call.prompt or "(no context)"),
            ],
            inputs=call.inputs,
            response_schema=schema,
            tier=profile.tier or 1,
            profile=named,
            temperature=profile.temperature,
            max_tokens=profile.max_tokens,
        )
        if profile.provider == BUILTIN_PROVIDER:
            return LocalOnlyRequest(request, builtin_only=True)
        if call.local_only:
            return LocalOnlyRequest(request)
        return request

    def answer(self, response: Any) -> Any:
        if isinstance(response, ChatResponse):
            return response.parsed if response.parsed is not None else response.content
        return response

    def is_local(self, profile: ModelProfile) -> bool:
        if profile.provider == BUILTIN_PROVIDER:
            return True
        local = {p.name for p in local_config(self.config).providers}
        if profile.provider is not None:
            return profile.provider in local
        return all(p.name in local for p in self.config.providers)


class AgentAwareModelCaller:
    """The run's ModelCaller: router calls as before; a :class:`LocalOnlyRequest` goes to a
    router built (once, on first use) from the loopback providers only — or from none, the
    built-in model alone.

    Each journaled answer also keeps the messages that were sent for it (``SENT_KEY``), so a
    step's detail can show the prompt beside the answer; ``decode`` drops them again.
    """

    def __init__(
        self, base: Any, router: SmartModelRouter, build: Callable[[RouterConfig], Any]
    ) -> None:
        self.base = base
        self.router = router
        self._build = build
        self._local: dict[bool, SmartModelRouter] = {}
        self._sent: dict[int, list[dict[str, str]]] = {}
        """id(response) → the messages sent for it, until ``encode`` journals them."""

    async def complete(self, request: Any, step: StepInfo) -> ChatResponse:
        if isinstance(request, LocalOnlyRequest):
            local = self._local.get(request.builtin_only)
            if local is None:
                config = local_config(self.router.config)
                if request.builtin_only:
                    config = config.model_copy(update={"providers": [], "profiles": {}})
                local = self._local[request.builtin_only] = self._build(config)
            return self._remember(request.request, await local.complete(request.request))
        response: ChatResponse = await self.base.complete(request, step)
        return self._remember(request, response)

    async def stream(self, request: Any, step: StepInfo, sink: ModelOutputSink) -> ChatResponse:
        """Router calls stream their text to ``sink``; a loopback-only one answers whole."""
        if isinstance(request, LocalOnlyRequest):
            return await self.complete(request, step)
        response: ChatResponse = await self.base.stream(request, step, sink)
        return self._remember(request, response)

    def context_limit(self, tier: int, profile: str | None) -> ContextLimit | None:
        """The router's tightest context window for a call of ``tier``/``profile``: research
        fits its prompts to it (without it, the live run's prompts of ~84,000 tokens went
        unfitted to a 4,096-token model, which the router then skipped for the built-in one)."""
        return self.router.context_limit(tier, profile)

    def _remember(self, request: Any, response: ChatResponse) -> ChatResponse:
        if isinstance(request, ChatRequest):
            self._sent[id(response)] = [m.model_dump() for m in wire_messages(request)]
        return response

    def encode(self, response: Any) -> dict[str, Any]:
        encoded: dict[str, Any] = self.base.encode(response)
        sent = self._sent.pop(id(response), None)
        if sent is not None:
            encoded[SENT_KEY] = sent
        return encoded

    def decode(self, request: Any, data: dict[str, Any]) -> ChatResponse:
        if isinstance(request, LocalOnlyRequest):
            request = request.request
        answer = {key: value for key, value in data.items() if key != SENT_KEY}
        decoded: ChatResponse = self.base.decode(request, answer)
        return decoded

    def usage(self, response: Any) -> Any:
        return self.base.usage(response)

    async def aclose(self) -> None:
        for local in self._local.values():
            await local.aclose()
