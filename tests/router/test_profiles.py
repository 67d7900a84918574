"""Model profiles in the chain: an unknown one is noted on the request and warned about once;
a known one's chain is its own, not reused for requests without it. Real loopback calls. And a
configuration the router cannot serve is refused naming the provider."""

from __future__ import annotations

import logging

import pytest

from router.config import RouterConfig, load_router_config
from router.fault.server import FaultServer
from router.local import TaskHandlerRegistry
from router.models import Attempt
from router.router import SmartModelRouter

from .conftest import RouterFactory, provider_entry, request


def config_with_profile(fault_server: FaultServer) -> RouterConfig:
    return load_router_config(
        {
            "providers": [
                provider_entry(fault_server, "main", weight=1000.0),
                provider_entry(fault_server, "side"),
            ],
            "profiles": {"careful": {"provider": "side", "model": "side-special"}},
        },
        "test",
    )


async def test_an_unknown_profile_is_noted_on_each_request_and_warned_about_once(
    fault_server: FaultServer,
    make_router: RouterFactory,
    keys: dict,
    caplog: pytest.LogCaptureFixture,
) -> None:
    router = make_router(config_with_profile(fault_server))
    with caplog.at_level(logging.WARNING, logger="router.router"):
        first = await router.complete(request(profile="nope", tier=1))
        second = await router.complete(request(profile="nope", tier=1))
    note = Attempt(
        provider="router", outcome="skipped", detail="unknown profile 'nope'; using tier 1"
    )
    assert first.attempts[0] == note and second.attempts[0] == note
    assert first.provider == second.provider == "main"
    assert [r.getMessage() for r in caplog.records if r.name == "router.router"] == [
        "unknown model profile 'nope': add it under router.profiles"
    ]


async def test_a_profiles_chain_is_not_reused_for_requests_without_it(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    router = make_router(config_with_profile(fault_server))
    careful = await router.complete(request(profile="careful"))
    plain = await router.complete(request())
    unknown = await router.complete(request(profile="nope"))
    assert (careful.provider, careful.model) == ("side", "side-special")
    assert (plain.provider, plain.model) == ("main", "main-model")
    assert (unknown.provider, unknown.model) == ("main", "main-model")


def test_a_configured_provider_without_its_provider_object_is_refused_by_name(
    fault_server: FaultServer,
) -> None:
    with pytest.raises(ValueError) as refused:
        SmartModelRouter(
            config_with_profile(fault_server), providers={}, task_handlers=TaskHandlerRegistry()
        )
    assert str(refused.value) == "no provider object for configured provider 'main'"
