"""The parameters a call is sent with, as the provider receives them over loopback: the
profile's output limit, else the policy's default where the API requires one (Anthropic)."""

from __future__ import annotations

from router.config import load_router_config
from router.fault_server import FaultServer

from .conftest import RouterFactory, make_config, provider_entry, request


async def test_the_output_limit_comes_from_the_profile_else_from_the_policy(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    entry = provider_entry(fault_server, "claude", kind="anthropic")
    config = load_router_config(
        {
            "providers": [entry],
            "profiles": {"brief": {"provider": "claude", "max_tokens": 64}},
            "policy": {"default_output_tokens": 300},
        },
        "test",
    )
    router = make_router(config)
    assert (await router.complete(request())).provider == "claude"
    assert (await router.complete(request(profile="brief"))).provider == "claude"
    sent = [r.json["max_tokens"] for r in fault_server.requests_for("claude", "chat")]
    assert sent == [300, 64]
    assert make_config([entry]).policy.default_output_tokens != 300  # 300 is not the default
