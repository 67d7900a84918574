"""What one call's outcome does to its provider's record: a timeout of the provider's own limit
counts against it (only the caller's shorter deadline does not), and every answered call is
settled with the adaptive throttle. Real loopback calls."""

from __future__ import annotations

from router.fault.server import FaultServer
from router.models import ProviderSnapshot
from router.router import SmartModelRouter

from .conftest import RouterFactory, make_config, provider_entry, request


def snap(router: SmartModelRouter, name: str) -> ProviderSnapshot:
    return {s.name: s for s in router.snapshot()}[name]


async def test_a_timeout_at_the_providers_own_limit_counts_against_it(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"slow": {"fault": {"kind": "timeout", "hang_s": 30}}}})
    router = make_router(make_config([provider_entry(fault_server, "slow", timeout_s=0.1)]))
    response = await router.complete(request())  # the request's own deadline is far away
    assert response.attempts[0].error_class == "timeout"
    state = snap(router, "slow")
    assert (state.failures_total, state.success_rate, state.last_error) == (1, 0.0, "timeout")


async def test_a_refused_call_is_settled_with_the_throttle(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"fault": {"status": 500}}}})
    router = make_router(make_config([provider_entry(fault_server, "openai")]))
    await router.complete(request())
    # one call sent, none accepted: p = (1 - 2 x 0) / (1 + 1)
    assert snap(router, "openai").throttle_reject_p == 0.5
