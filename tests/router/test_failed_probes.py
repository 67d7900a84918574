"""A probing request whose health check fails: what it gives back and what it does not count.
Real loopback calls, on the injected clock."""

from __future__ import annotations

from router.clock import ManualClock
from router.fault.server import FaultServer
from router.models import BreakerState, ChatMessage, ChatRequest

from .conftest import RouterFactory, Verdict, make_config, provider_entry, request


def asking(n: int) -> ChatRequest:
    return ChatRequest(
        task="verify",
        messages=[ChatMessage(role="user", content=f"Is claim {n} supported?")],
        response_schema=Verdict,
    )


async def test_a_failed_health_check_is_not_one_of_the_requests_attempts(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """With one remote attempt allowed, a probe whose health check fails sent no request: the
    next provider in the chain is still called."""
    fault_server.set_script({"providers": {"big": {"fault": {"status": 500}}}})
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "big", models={2: "big-2"}),
                provider_entry(fault_server, "small", models={1: "small-1"}),
            ],
            max_attempts=1,
        )
    )
    breaker = router._by_name["big"].breaker
    for _ in range(100):
        if breaker.state is BreakerState.OPEN:
            break
        await router.complete(request(tier=2))
    clock.advance(breaker.cooldown_remaining())
    fault_server.set_script({"providers": {"big": {"health": {"status": 503}}}})
    response = await router.complete(request(tier=2))
    assert [(a.provider, a.outcome) for a in response.attempts] == [
        ("big", "probe_failed"),
        ("small", "ok"),
    ]
    assert (response.provider, response.degraded) == ("small", True)


async def test_a_failed_health_check_frees_the_models_probe_lease_too(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """A request that probes the provider and its model at once, whose health check fails, gives
    the model's lease back: once the provider's short break is over, the model is probed."""
    fault_server.set_script({"providers": {"azure": {"fault": {"status": 400}}}})
    router = make_router(make_config([provider_entry(fault_server, "azure")]))
    for n in range(5):  # five different requests refused: the model is OPEN
        await router.complete(asking(n))
    runtime = router._by_name["azure"]
    model = runtime.models.breaker("azure-model")
    clock.advance(model.cooldown_remaining())
    fault_server.set_script({"providers": {"azure": {"fault": {"status": 500}}}})
    for n in range(5):  # five model probes fail on the transport: the provider is OPEN
        await router.complete(asking(10 + n))
    assert runtime.breaker.state is BreakerState.OPEN
    assert model.state is BreakerState.HALF_OPEN
    clock.advance(runtime.breaker.cooldown_remaining())
    fault_server.set_script(
        {"providers": {"azure": {"health": {"status": 429, "retry_after_s": 1}}}}
    )
    failed = await router.complete(asking(20))
    assert [(a.provider, a.outcome) for a in failed.attempts][:1] == [("azure", "probe_failed")]
    assert model.can_attempt()  # given back with the provider's lease
    clock.advance(1.0)
    fault_server.set_script({"providers": {}})
    answered = await router.complete(asking(21))
    assert answered.provider == "azure"
    assert [a.outcome for a in answered.attempts] == ["probe_ok", "ok"]
