"""LLM providers over httpx and the SmartModelRouter (ADR-002): breakers, rate-limit buckets, adaptive
throttling, bulkheads, health-weighted selection, tiered degradation, a shared stats store, and a
loopback fault-injecting provider server. Imports nothing from engine, research or tui.

The package's public names are imported on first use (PEP 562 ``__getattr__``), so a command that
needs one small module (``router.config`` for the app's settings, ``router.models`` for a request)
does not pay for the whole router and httpx at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from router.build import build_router
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
    from router.router import SmartModelRouter

_HOMES = {
    "Attempt": "router.models",
    "BreakerState": "router.models",
    "ChatMessage": "router.models",
    "ChatRequest": "router.models",
    "ChatResponse": "router.models",
    "Clock": "router.clock",
    "ConfigError": "router.config",
    "ManualClock": "router.clock",
    "NoHandlerError": "router.errors",
    "ProviderConfig": "router.config",
    "ProviderSnapshot": "router.models",
    "RouterConfig": "router.config",
    "RouterError": "router.errors",
    "RouterPolicy": "router.config",
    "SmartModelRouter": "router.router",
    "SystemClock": "router.clock",
    "TaskHandlerRegistry": "router.local",
    "Usage": "router.models",
    "build_router": "router.build",
    "effective_router_config": "router.config",
    "load_router_config": "router.config",
    "router_config_from_env": "router.config",
}
"""Where each public name lives."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'router' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


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
