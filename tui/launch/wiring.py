"""The composition root's wiring, shared by the CLI and the TUI.

Here — and only here — the packages meet: the router is built from the config
file's ``router:`` section and the environment (:mod:`tui.config`) with
research's extractive model registered as the built-in provider's task
handlers; the router is adapted to the engine's ``ModelCaller`` and its
tie-breaker to the engine's ``TieBreaker``; the workspace corpus (default
collection plus the config's ``corpus.folders``) becomes the run's
``Retriever``; router snapshots become ``provider_state`` run events; and
:func:`wire_application` puts it all into a run's ``RunContext`` for
:func:`tui.launch.run.open_run`.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx

import research.steps  # noqa: F401 - registers the research steps in the engine's registry
from agents.services import AgentServices
from engine.context import CallUsage, StepInfo
from engine.events import ProviderState, RunEvent, RunStarted
from engine.live import LiveChannel, ModelOutputSink
from engine.protocol import RunContext, TieBreakAnswer, TieBreaker, TieBreakRequest
from research.corpus import Corpus, CorpusRetriever, IndexReport
from research.default_corpus import DEFAULT_COLLECTION, ensure_default_corpus
from research.extractive import HANDLERS
from research.prompts import estimate_tokens
from research.run_folders import RunFolders
from router.build import build_router
from router.clock import Clock
from router.config import RouterConfig, effective_router_config
from router.local import TaskHandlerRegistry
from router.models import ChatRequest, ChatResponse, ContextLimit, ProviderSnapshot
from router.router import SmartModelRouter
from router.streaming import StreamEvent
from router.tiebreak import choose_target
from tui.config import ConfigError, WorkbenchConfig, active_config
from tui.launch import agents_wiring
from tui.launch.parts import IndexProgress, RunParts
from tui.launch.workspace import Workspace


def _answering_with(handler: Callable[[dict[str, Any]], Any]) -> Callable[[Any], Any]:
    """A task handler over one research handler, which takes the request's inputs."""
    return lambda request: handler(dict(request.inputs))


def extractive_handlers(registry: TaskHandlerRegistry | None = None) -> TaskHandlerRegistry:
    """A task-handler registry answering every research task with the extractive model."""
    registry = registry or TaskHandlerRegistry()
    for task, handler in HANDLERS.items():
        registry.register(task, _answering_with(handler), replace=True)
    return agents_wiring.register_agent_handlers(registry)


def extractive_responder() -> Any:
    """The fault server's responder: the same extractive answers, over real HTTP."""
    return extractive_handlers().as_responder()


def build_workbench_router(
    stats_file: Path | None,
    *,
    config: RouterConfig | None = None,
    environ: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    stats_database: str | None = None,
) -> SmartModelRouter:
    """The router from ``config`` (None: the environment's provider keys), extractive model built in,
    its provider statistics in ``stats_file`` (None: in memory), or in ``stats_database`` (the
    config's PostgreSQL ``store``) when given.

    ``clock`` and ``rng`` (the throttle's and the jitter's draws) are
    injected by tests."""
    env = environ if environ is not None else os.environ
    resolved = config if config is not None else effective_router_config(None, env)
    return build_router(
        resolved,
        stats_path=stats_file,
        stats_database=stats_database,
        task_handlers=extractive_handlers(),
        clock=clock,
        transport=transport,
        rng=rng,
        environ=env,
    )


class RouterModelCaller:
    """``engine.context.ModelCaller`` over the SmartModelRouter."""

    def __init__(self, router: SmartModelRouter) -> None:
        self.router = router

    async def complete(self, request: Any, step: StepInfo) -> ChatResponse:
        return await self.router.complete(self._request(request, step))

    @staticmethod
    def _request(request: Any, step: StepInfo) -> ChatRequest:
        if not isinstance(request, ChatRequest):
            raise TypeError(
                f"step {step.step_id} passed {type(request).__name__}; llm() takes a router ChatRequest"
            )
        checked: ChatRequest = request
        if step.tier is not None and checked.tier == 1 and step.tier != 1:
            checked = checked.model_copy(update={"tier": step.tier})
        if step.profile and not checked.profile:
            checked = checked.model_copy(update={"profile": step.profile})
        return checked

    def context_limit(self, tier: int, profile: str | None) -> ContextLimit | None:
        """The tightest context window the router knows for a call of ``tier``/``profile``."""
        return self.router.context_limit(tier, profile)

    async def stream(self, request: Any, step: StepInfo, sink: ModelOutputSink) -> ChatResponse:
        """``complete``, streamed: the router's partial text goes to the engine's live sink."""

        def forward(event: StreamEvent) -> None:
            sink(event.kind, event.provider, event.text)

        return await self.router.stream(self._request(request, step), forward)

    def encode(self, response: Any) -> dict[str, Any]:
        encoded: dict[str, Any] = response.model_dump(mode="json")
        return encoded

    def decode(self, request: Any, data: dict[str, Any]) -> ChatResponse:
        """Rebuild a journaled response; ``parsed`` becomes the request's schema again."""
        response = ChatResponse.model_validate(data)
        schema = getattr(request, "response_schema", None)
        if schema is not None and isinstance(response.parsed, dict):
            try:
                response = response.model_copy(
                    update={"parsed": schema.model_validate(response.parsed)}
                )
            except ValueError:
                pass
        return response

    def usage(self, response: Any) -> CallUsage:
        tokens = response.usage.total_tokens
        if tokens == 0:
            tokens = estimate_tokens(response.content)
        return CallUsage(
            tokens=tokens,
            provider=response.provider,
            degraded=response.degraded,
            cost_usd=response.cost_usd,
            fallback=response.fallback,
        )


def router_tie_breaker(router: SmartModelRouter) -> TieBreaker:
    """ADR-004's model-backed tie-breaker (router/tiebreak.py) in the engine's shape."""

    async def tie_breaker(request: TieBreakRequest) -> TieBreakAnswer:
        result = await choose_target(
            router,
            step_id=request.step_id,
            valid_targets=request.valid_targets,
            hint=request.hint,
            context=request.context,
            default_target=request.default_target,
            timeout_s=request.timeout_s,
        )
        return TieBreakAnswer(
            target=result.target,
            confidence=result.confidence,
            reasoning=result.reasoning,
            outcome=result.outcome,
        )

    return tie_breaker


@dataclass
class ProviderStateForwarder:
    """Router snapshots → ``provider_state`` events of the run (written to the store, then fanned out)."""

    store: Any
    run_id: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_events(self, events: list[RunEvent]) -> None:
        for event in events:
            if isinstance(event, RunStarted):
                with self._lock:
                    self.run_id = event.run_id

    def on_snapshot(self, snapshot: ProviderSnapshot) -> None:
        with self._lock:
            run_id = self.run_id
        if run_id is None:
            return
        self.store.append(
            ProviderState(
                run_id=run_id, provider=snapshot.name, snapshot=snapshot.model_dump(mode="json")
            )
        )


_indexed_lock = threading.Lock()
_indexed: set[tuple[Path, Path]] = set()
"""(corpus file, folder) pairs whose config folder this process has indexed already."""


def _config_folder(folder: str, settings: WorkbenchConfig) -> Path:
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(
            f"{settings.source or 'config'}: corpus.folders: {folder} is not a folder; "
            "create it or remove it from the list"
        )
    return root


def _collection_name(corpus: Corpus, root: Path) -> str:
    """The folder's name, unless another folder of that name already holds the collection."""
    roots = {info.name: info.root for info in corpus.collections()}
    name = root.name or "folder"
    if roots.get(name, str(root)) == str(root):
        return name
    return f"{name}-{hashlib.sha256(str(root).encode()).hexdigest()[:8]}"


def index_config_folders(
    corpus: Corpus, settings: WorkbenchConfig, progress: IndexProgress | None = None
) -> list[IndexReport]:
    """Index the config's ``corpus.folders`` into ``corpus``, each once per process.

    Indexing is incremental: an unchanged file is read and hashed, nothing more.
    """
    reports: list[IndexReport] = []
    with _indexed_lock:
        for folder in settings.corpus.folders:
            root = _config_folder(folder, settings)
            key = (corpus.path.resolve(), root)
            if key not in _indexed:
                counts = None if progress is None else partial(progress, f"indexing {root}")
                reports.append(
                    corpus.add_folder(
                        root,
                        _collection_name(corpus, root),
                        counts,
                        limits=settings.corpus.limits(),
                    )
                )
                _indexed.add(key)
    return reports


def open_corpus(
    workspace: Workspace,
    *,
    default: bool = True,
    settings: WorkbenchConfig | None = None,
    progress: IndexProgress | None = None,
) -> Corpus:
    """The workspace's corpus.

    With ``default``, the default collection is built on first use and the
    config's ``corpus.folders`` are indexed (``settings`` None: the active
    config file, see :func:`tui.config.active_config`); ``progress`` hears the counts.
    """
    corpus = Corpus(workspace.corpus_db)
    if not default:
        return corpus
    try:
        counts = None if progress is None else partial(progress, f"indexing {DEFAULT_COLLECTION}")
        ensure_default_corpus(corpus, counts)
        index_config_folders(
            corpus, settings if settings is not None else active_config(), progress
        )
    except BaseException:
        corpus.close()
        raise
    return corpus


async def wire_application(
    stack: AsyncExitStack,
    context: RunContext,
    workspace: Workspace,
    settings: WorkbenchConfig | None,
    parts: RunParts,
    progress: IndexProgress | None = None,
) -> SmartModelRouter:
    """Give ``context`` the router-backed model, the corpus retriever and the tie-breaker; the router.

    ``settings`` None: the active config file, read only when a part must be built from it.
    What is opened here closes with ``stack``; given ``parts`` stay open. A bad config file
    raises :class:`tui.config.ConfigError`.
    """
    if settings is None:
        needed = parts.corpus is None or parts.router is None
        settings = active_config() if needed else WorkbenchConfig()
    corpus = parts.corpus
    if corpus is None:
        corpus = stack.enter_context(open_corpus(workspace, settings=settings, progress=progress))
    env = parts.environ if parts.environ is not None else os.environ
    router = parts.router
    if router is None:
        config = agents_wiring.with_agent_profiles(
            settings.effective_router(env), workspace.agent_registry.registry
        )
        router = build_workbench_router(
            workspace.provider_stats_db, config=config, environ=env, stats_database=settings.store
        )
        stack.push_async_callback(router.aclose)
    forwarder = ProviderStateForwarder(context.store, context.run_id)
    stack.callback(context.store.subscribe(forwarder.on_events))
    stack.callback(router.subscribe(forwarder.on_snapshot))
    model = agents_wiring.AgentAwareModelCaller(
        RouterModelCaller(router),
        router,
        lambda local: build_workbench_router(None, config=local, environ=env),
    )
    stack.push_async_callback(model.aclose)
    context.model = model
    context.retriever = CorpusRetriever(corpus)
    context.tie_breaker = context.tie_breaker or router_tie_breaker(router)
    context.live = context.live or LiveChannel()
    context.services.provide(RunFolders(workspace.run_folders))
    context.services.provide(AgentServices(port=agents_wiring.RouterAgentPort(router)))
    return router
