"""The parameters a call is sent with, as the provider receives them over loopback: the
profile's output limit, else the policy's default where the API requires one (Anthropic);
the timeout, what is left of the request's deadline."""

from __future__ import annotations

from typing import Any

import pytest

from router.clock import ManualClock
from router.config import load_router_config
from router.fault.server import FaultServer, RecordedRequest

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


async def test_each_call_gets_what_is_left_of_the_requests_deadline(
    fault_server: FaultServer, make_router: RouterFactory, clock: ManualClock, keys: dict
) -> None:
    """The first call may use the request's 0.2005 s (under the provider's 5 s); the second is
    sent with half a millisecond left, raised to the floor of one millisecond."""
    fault_server.set_script({"providers": {"first": {"fault": {"status": 500}}}})

    def takes_the_deadline_but_half_a_millisecond(record: RecordedRequest) -> None:
        if record.route == "chat" and record.provider == "first":
            clock.advance(0.2)

    fault_server.on_request = takes_the_deadline_but_half_a_millisecond
    router = make_router(
        make_config(
            [
                provider_entry(fault_server, "first", weight=1000.0),
                provider_entry(fault_server, "second"),
            ]
        )
    )
    given: list[tuple[str, float]] = []
    for name in ("first", "second"):
        provider = router._by_name[name].provider
        chat = provider.chat

        async def spy(spec: Any, timeout_s: float, name: str = name, chat: Any = chat) -> Any:
            given.append((name, timeout_s))
            return await chat(spec, timeout_s)

        provider.chat = spy  # type: ignore[method-assign]
    await router.complete(request(timeout_s=0.2005))  # whether 1 ms was enough is not the point
    assert given == [("first", pytest.approx(0.2005)), ("second", 0.001)]
