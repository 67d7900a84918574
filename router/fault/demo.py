"""A router config that points providers at a running fault server (the chaos demo, the tests)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from router.config import RouterPolicy
from router.providers.registry import ADAPTERS

_SCALED_POLICY_KEYS = (
    "cooldown_failure_s",
    "cooldown_rate_limit_s",
    "cooldown_timeout_s",
    "cooldown_quota_s",
    "max_cooldown_s",
    "failure_window_s",
    "throttle_window_s",
    "recency_tau_s",
    "probe_timeout_s",
    "probe_lease_s",
    "probe_min_s",
    "request_timeout_s",
    "capacity_wait_s",
    "shed_queue_wait_s",
)


def scaled_policy(time_scale: float) -> dict[str, float]:
    """Router policy durations multiplied by the fault server's time scale, so cooldowns keep pace with
    the scaled faults and a demo shows a whole OPEN -> HALF_OPEN -> CLOSED cycle in seconds."""
    defaults = RouterPolicy()
    return {key: getattr(defaults, key) * time_scale for key in _SCALED_POLICY_KEYS}


def demo_router_config(
    base_url: str, prefixes: list[str], model: str = "fault-model", time_scale: float = 1.0
) -> dict[str, Any]:
    """A ``router:`` section pointing one provider at each prefix: the kind whose
    ``demo_prefix`` (else whose name) it is, else the first kind listed (openai).

    No keys are needed: ``api_key_env`` is null, the fault server does not check credentials.
    With a time scale other than 1 the policy's durations are scaled too (:func:`scaled_policy`).
    """
    by_prefix = {adapter.demo_prefix or kind: adapter for kind, adapter in ADAPTERS.items()}
    first = next(iter(ADAPTERS.values()))
    providers: list[dict[str, Any]] = []
    for prefix in prefixes:
        adapter = by_prefix.get(prefix, first)
        kind = adapter.kind
        # the kind's real base URL's path, under the prefix: /v1 for OpenAI, /inference for GitHub
        base = f"{base_url}/{prefix}" + urlsplit(adapter.default_base_url or "").path
        name = prefix.lower().replace(".", "-")
        providers.append(
            {
                "name": name,
                "kind": kind,
                "base_url": base,
                "model": model,
                "api_key_env": None,
                "timeout_s": 10.0 * time_scale,
            }
        )
    section: dict[str, Any] = {"providers": providers}
    if time_scale != 1.0:
        section["policy"] = scaled_policy(time_scale)
    return section
