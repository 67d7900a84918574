"""Which providers a request tries, in which order.

A request's chain is a list of groups: its profile's provider (if any), then
the providers with a model for its tier, then each lower tier down to 1 —
answers from a lower tier are marked ``degraded``. The built-in provider
follows the chain and is not part of it.

Within a group the order is health-weighted: each provider's weight is
``config weight x health score² x free capacity`` (capacity = the tighter of
its buckets' headroom and its free bulkhead slots), the first pick is drawn
at random by weight, and the rest follow by weight. An OPEN provider weighs
nothing, so its share of the traffic spreads over the others in proportion to
their health and remaining capacity rather than evenly, and not all onto the
next in line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from router.config import ProfileConfig
from router.runtime import ProviderRuntime

MIN_CAPACITY = 0.05


@dataclass(frozen=True, slots=True)
class Candidate:
    runtime: ProviderRuntime
    model: str
    tier: int
    temperature: float | None = None
    max_tokens: int | None = None


def plan_chain(
    runtimes: list[ProviderRuntime], tier: int, profile: ProfileConfig | None
) -> list[list[Candidate]]:
    groups: list[list[Candidate]] = []
    if profile is not None:
        for rt in runtimes:
            if rt.name == profile.provider:
                model = profile.model or rt.cfg.model_for(tier) or rt.cfg.models[max(rt.cfg.models)]
                groups.append([Candidate(rt, model, tier, profile.temperature, profile.max_tokens)])
    for level in range(tier, 0, -1):
        group = []
        for rt in runtimes:
            level_model = rt.cfg.model_for(level)
            if level_model is not None:
                group.append(Candidate(rt, level_model, level))
        if group:
            groups.append(group)
    return groups


def health_scores(runtimes: list[ProviderRuntime]) -> dict[str, float]:
    """Health score per provider; the latency term is relative to the fastest provider given."""
    emas = [rt.metrics.ema_latency for rt in runtimes]
    known = [e for e in emas if e is not None and e > 0]
    fastest = min(known) if known else None
    scores: dict[str, float] = {}
    for rt, ema in zip(runtimes, emas):
        latency_score = 1.0 if fastest is None or ema is None or ema <= 0 else fastest / ema
        scores[rt.name] = rt.metrics.health_score(latency_score)
    return scores


def order_group(group: list[Candidate], rng: random.Random) -> list[Candidate]:
    if len(group) <= 1:
        return list(group)
    runtimes = [c.runtime for c in group]
    scores = health_scores(runtimes)
    weights = [
        0.0  # OPEN: its traffic goes to the others by their weights
        if rt.misconfigured or not rt.breaker.can_attempt()
        else rt.cfg.weight * scores[rt.name] ** 2 * max(MIN_CAPACITY, rt.capacity())
        for rt in runtimes
    ]
    total = sum(weights)
    indices = sorted(
        range(len(group)), key=lambda i: -weights[i]
    )  # stable: config order breaks ties
    if total <= 0:
        return [group[i] for i in indices]
    draw = rng.random() * total
    first = indices[-1]
    for i, weight in enumerate(weights):
        draw -= weight
        if draw < 0:
            first = i
            break
    return [group[first]] + [group[i] for i in indices if i != first]
