"""LLM providers over httpx and the SmartModelRouter (ADR-002): breakers, rate-limit buckets, adaptive
throttling, bulkheads, health-weighted selection, tiered degradation, a shared stats store, and a
loopback fault-injecting provider server. Imports nothing from engine, research or tui."""

from router.clock import Clock, ManualClock, SystemClock
from router.config import (
    ConfigError,
    ProviderConfig,
    RouterConfig,
    RouterPolicy,
    effective_router_config,
    load_router_config,
    router_config_from_env,
)
from router.errors import NoHandlerError, RouterError
from router.local import TaskHandlerRegistry
from router.models import (
    Attempt,
    BreakerState,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ProviderSnapshot,
    Usage,
)
from router.router import SmartModelRouter, build_router

__all__ = [
    "Attempt",
    "BreakerState",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "Clock",
    "ConfigError",
    "ManualClock",
    "NoHandlerError",
    "ProviderConfig",
    "ProviderSnapshot",
    "RouterConfig",
    "RouterError",
    "RouterPolicy",
    "SmartModelRouter",
    "SystemClock",
    "TaskHandlerRegistry",
    "Usage",
    "build_router",
    "effective_router_config",
    "load_router_config",
    "router_config_from_env",
]
