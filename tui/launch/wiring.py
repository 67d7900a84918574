"""The composition root's wiring, shared by the CLI and the TUI.

Here — and only here — the packages meet: the router is built from the config
file's ``router:`` section and the environment (:mod:`tui.config`) with
research's extractive model registered as the built-in provider's task
handlers; the router is adapted to the engine's ``ModelCaller`` and its
tie-breaker to the engine's ``TieBreaker``; the workspace corpus (default
collection plus the config's ``corpus.folders``) becomes the run's
``Retriever``; router snapshots become ``provider_state`` run events; and
:func:`build_run_context` puts it all into a ``RunContext``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import research.steps  # noqa: F401 - registers the research steps in the engine's registry
from engine.agents.port import PORT_EXTRA
from engine.context import CallUsage, StepInfo
from engine.events import ProviderState, RunEvent, RunStarted
from engine.live import LiveChannel, ModelOutputSink
from engine.protocol import (
    InterruptResponder,
    RunContext,
    TieBreakAnswer,
    TieBreaker,
    TieBreakRequest,
)
from engine.store import RunStore, new_run_id
from research.corpus import Corpus, CorpusRetriever, IndexReport
from research.default_corpus import ensure_default_corpus
from research.extractive import HANDLERS
from research.prompts import estimate_tokens
from research.steps.delivery import RUNS_DIR_EXTRA
from router.clock import Clock
from router.config import RouterConfig, effective_router_config
from router.local import TaskHandlerRegistry
from router.models import ChatRequest, ChatResponse, ProviderSnapshot
from router.router import SmartModelRouter, build_router
from router.streaming import StreamEvent
from router.tiebreak import choose_target
from tui.config import ConfigError, WorkbenchConfig, active_config
from tui.launch import agents_wiring

CORPUS_FILE = "corpus.sqlite"
RUNS_FILE = "runs.sqlite"
ROUTER_EXTRA = "wiring.router"
CORPUS_EXTRA = "wiring.corpus"


def extractive_handlers(registry: TaskHandlerRegistry | None = None) -> TaskHandlerRegistry:
    """A task-handler registry answering every research task with the extractive model."""
    registry = registry or TaskHandlerRegistry()
    for task, handler in HANDLERS.items():
        registry.register(
            task, lambda request, handler=handler: handler(dict(request.inputs)), replace=True
        )
    return agents_wiring.register_agent_handlers(registry)


def extractive_responder() -> Any:
    """The fault server's responder: the same extractive answers, over real HTTP."""
    return extractive_handlers().as_responder()


def build_workbench_router(
    workspace: Path | None,
    *,
    config: RouterConfig | None = None,
    environ: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock | None = None,
) -> SmartModelRouter:
    """The router from ``config`` (None: the environment's provider keys), extractive model built in."""
    env = environ if environ is not None else os.environ
    resolved = config if config is not None else effective_router_config(None, env)
    return build_router(
        resolved,
        stats_path=workspace,
        task_handlers=extractive_handlers(),
        clock=clock,
        transport=transport,
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

    async def stream(self, request: Any, step: StepInfo, sink: ModelOutputSink) -> ChatResponse:
        """``complete``, streamed: the router's partial text goes to the engine's live sink."""

        def forward(event: StreamEvent) -> None:
            sink(event.kind, event.provider, event.text)

        return await self.router.stream(self._request(request, step), forward)

    def encode(self, response: Any) -> dict[str, Any]:
        return response.model_dump(mode="json")

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


def index_config_folders(corpus: Corpus, settings: WorkbenchConfig) -> list[IndexReport]:
    """Index the config's ``corpus.folders`` into ``corpus``, each once per process.

    Indexing is incremental: an unchanged file is read and hashed, nothing more.
    """
    reports: list[IndexReport] = []
    with _indexed_lock:
        for folder in settings.corpus.folders:
            root = _config_folder(folder, settings)
            key = (corpus.path.resolve(), root)
            if key not in _indexed:
                reports.append(corpus.add_folder(root, _collection_name(corpus, root)))
                _indexed.add(key)
    return reports


def open_corpus(
    workspace: Path, *, default: bool = True, settings: WorkbenchConfig | None = None
) -> Corpus:
    """The workspace's corpus (``corpus.sqlite``).

    With ``default``, the default collection is built on first use and the
    config's ``corpus.folders`` are indexed (``settings`` None: the active
    config file, see :func:`tui.config.active_config`).
    """
    corpus = Corpus(Path(workspace) / CORPUS_FILE)
    if not default:
        return corpus
    try:
        ensure_default_corpus(corpus)
        index_config_folders(corpus, settings if settings is not None else active_config())
    except BaseException:
        corpus.close()
        raise
    return corpus


def resolve_workspace(workspace: str | Path | None) -> Path:
    if workspace is None:
        from tui.launch.workbench import default_workspace

        path = default_workspace()
    else:
        path = Path(workspace).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _settings_for_run(settings: WorkbenchConfig | None, *, needed: bool) -> WorkbenchConfig:
    """``settings``, else the active config file when the run needs it, else the defaults."""
    if settings is not None:
        return settings
    return active_config() if needed else WorkbenchConfig()


def _router_for_run(
    root: Path,
    settings: WorkbenchConfig,
    config: RouterConfig | None,
    environ: Mapping[str, str] | None,
    transport: httpx.AsyncBaseTransport | None,
    clock: Clock | None,
) -> SmartModelRouter:
    env = environ if environ is not None else os.environ
    resolved = config if config is not None else settings.effective_router(env)
    resolved = agents_wiring.with_agent_profiles(
        resolved, agents_wiring.register_agent_steps().registry
    )
    return build_workbench_router(
        root, config=resolved, environ=env, transport=transport, clock=clock
    )


def build_run_context(
    workspace: str | Path | None,
    *,
    inputs: dict[str, Any],
    responder: InterruptResponder | None,
    run_id: str | None = None,
    store: Any | None = None,
    router: SmartModelRouter | None = None,
    corpus: Corpus | None = None,
    collections: list[str] | None = None,
    config: RouterConfig | None = None,
    settings: WorkbenchConfig | None = None,
    environ: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock | None = None,
) -> RunContext:
    """Everything a run needs: store, router-backed model, corpus retriever, tie-breaker, responder.

    ``settings`` is the workbench config (None: the active config file, read
    only when something below needs it). The router is ``router``, else built
    from ``config``, else from the settings' ``router:`` section and the
    environment. The corpus is ``corpus`` as given, else the workspace corpus
    with the settings' ``corpus.folders`` indexed. A bad config file raises
    :class:`tui.config.ConfigError`. Close what it opened with
    :func:`close_run_context` when the run ends.
    """
    root = resolve_workspace(workspace)
    settings = _settings_for_run(
        settings, needed=corpus is None or (router is None and config is None)
    )
    opened = corpus is None
    corpus = corpus or open_corpus(root, settings=settings)
    try:
        router = router or _router_for_run(root, settings, config, environ, transport, clock)
    except BaseException:
        if opened:
            corpus.close()
        raise
    store = store if store is not None else RunStore(root / RUNS_FILE)
    run_id = run_id or new_run_id()
    forwarder = ProviderStateForwarder(store, run_id)
    unsubscribe_store = store.subscribe(forwarder.on_events)
    unsubscribe_router = router.subscribe(forwarder.on_snapshot)
    return RunContext(
        store=store,
        inputs=dict(inputs),
        run_id=run_id,
        model=agents_wiring.AgentAwareModelCaller(
            RouterModelCaller(router),
            router,
            lambda local: build_workbench_router(
                None, config=local, environ=environ, transport=transport, clock=clock
            ),
        ),
        retriever=CorpusRetriever(corpus, collections),
        tie_breaker=router_tie_breaker(router),
        responder=responder,
        live=LiveChannel(),
        extras={
            RUNS_DIR_EXTRA: str(root / "runs"),
            ROUTER_EXTRA: router,
            CORPUS_EXTRA: corpus,
            PORT_EXTRA: agents_wiring.RouterAgentPort(router),
            "wiring.unsubscribe": [unsubscribe_store, unsubscribe_router],
        },
    )


async def close_run_context(context: RunContext, *, close_store: bool = False) -> None:
    for unsubscribe in context.extras.get("wiring.unsubscribe", []):
        unsubscribe()
    if isinstance(context.model, agents_wiring.AgentAwareModelCaller):
        await context.model.aclose()
    router = context.extras.get(ROUTER_EXTRA)
    if router is not None:
        await router.aclose()
    corpus = context.extras.get(CORPUS_EXTRA)
    if corpus is not None:
        corpus.close()
    if close_store:
        context.store.close()
